def select(N, L):
    if not ((N >= 0) and (L >= 1)):
        return -1
    if (N == 1):
        return 0
    if True:
        return 1
    return -1


def spill_sizes(N, L):
    return ()


def variant_0(_launch, N, L):
    if True:
        _launch(0, (), (), (1,))


def variant_1(_launch, N, L):
    if (N >= 1):
        _o = (0, )
        if (((N - 1) - _o[0]) // 1 + 1) >= _UNITS:
            _launch(1, (), _o, (((N - 1) - _o[0]) // 1 + 1, ))
        else:
            _launch(2, (), _o, (((N - 1) - _o[0]) // 1 + 1, ))
