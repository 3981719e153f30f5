def select(N, T):
    if not ((N >= 3) and (T >= 0)):
        return -1
    if True:
        return 0
    return -1


def spill_sizes(N, T):
    return ()


def variant_0(_launch, N, T):
    if (T >= 1):
        for pd_h0 in range(0, (T - 1) + 1):
            if ((T >= (pd_h0 + 1)) and (pd_h0 >= 0)):
                _o = (1, 1, )
                _launch(0, (pd_h0, ), _o, (((N - 2) - _o[0]) // 16 + 1, ((N - 2) - _o[1]) // 16 + 1, ))
            if ((T >= (pd_h0 + 1)) and (pd_h0 >= 0)):
                _o = (1, 1, )
                _launch(1, (pd_h0, ), _o, (((N - 2) - _o[0]) // 16 + 1, ((N - 2) - _o[1]) // 16 + 1, ))
