def select(N, K, M):
    if not (((N >= 1) and (K >= 1)) and (M >= 1)):
        return -1
    if (N == 1):
        return 0
    if ((((N % 48) == 0) and ((K % 256) == 0)) and ((M % 256) == 0)):
        return 1
    if (M >= 96):
        return 2
    if (M <= 95):
        return 3
    if True:
        return 4
    return -1


def spill_sizes(N, K, M):
    return ()


def variant_0(_launch, N, K, M):
    if True:
        _o = (0, )
        if (((M - 1) - _o[0]) // 256 + 1) >= _UNITS:
            _launch(0, (), _o, (((M - 1) - _o[0]) // 256 + 1, ))
        elif (((M - 1) - _o[0]) // 32 + 1) >= _UNITS:
            _launch(1, (), _o, (((M - 1) - _o[0]) // 32 + 1, ))
        else:
            _launch(2, (), _o, (((M - 1) - _o[0]) // 32 + 1, ))


def variant_1(_launch, N, K, M):
    if True:
        _o = (0, 0, )
        if (((N - 1) - _o[0]) // 64 + 1) * (((M - 1) - _o[1]) // 64 + 1) >= _UNITS:
            _launch(3, (), _o, (((N - 1) - _o[0]) // 64 + 1, ((M - 1) - _o[1]) // 64 + 1, ))
        elif (((N - 1) - _o[0]) // 32 + 1) * (((M - 1) - _o[1]) // 32 + 1) >= _UNITS:
            _launch(4, (), _o, (((N - 1) - _o[0]) // 32 + 1, ((M - 1) - _o[1]) // 32 + 1, ))
        else:
            _launch(5, (), _o, (((N - 1) - _o[0]) // 16 + 1, ((M - 1) - _o[1]) // 16 + 1, ))


def variant_2(_launch, N, K, M):
    if True:
        _o = (0, 0, )
        if (((N - 1) - _o[0]) // 64 + 1) * (((M - 1) - _o[1]) // 64 + 1) >= _UNITS:
            _launch(6, (), _o, (((N - 1) - _o[0]) // 64 + 1, ((M - 1) - _o[1]) // 64 + 1, ))
        elif (((N - 1) - _o[0]) // 32 + 1) * (((M - 1) - _o[1]) // 32 + 1) >= _UNITS:
            _launch(7, (), _o, (((N - 1) - _o[0]) // 32 + 1, ((M - 1) - _o[1]) // 32 + 1, ))
        else:
            _launch(8, (), _o, (((N - 1) - _o[0]) // 16 + 1, ((M - 1) - _o[1]) // 16 + 1, ))


def variant_3(_launch, N, K, M):
    if True:
        _o = (0, 0, )
        if (((N - 1) - _o[0]) // 64 + 1) * (((M - 1) - _o[1]) // 64 + 1) >= _UNITS:
            _launch(9, (), _o, (((N - 1) - _o[0]) // 64 + 1, ((M - 1) - _o[1]) // 64 + 1, ))
        elif (((N - 1) - _o[0]) // 32 + 1) * (((M - 1) - _o[1]) // 32 + 1) >= _UNITS:
            _launch(10, (), _o, (((N - 1) - _o[0]) // 32 + 1, ((M - 1) - _o[1]) // 32 + 1, ))
        else:
            _launch(11, (), _o, (((N - 1) - _o[0]) // 16 + 1, ((M - 1) - _o[1]) // 16 + 1, ))


def variant_4(_launch, N, K, M):
    if True:
        _o = (0, 0, )
        if (((N - 1) - _o[0]) // 64 + 1) * (((M - 1) - _o[1]) // 64 + 1) >= _UNITS:
            _launch(12, (), _o, (((N - 1) - _o[0]) // 64 + 1, ((M - 1) - _o[1]) // 64 + 1, ))
        elif (((N - 1) - _o[0]) // 32 + 1) * (((M - 1) - _o[1]) // 32 + 1) >= _UNITS:
            _launch(13, (), _o, (((N - 1) - _o[0]) // 32 + 1, ((M - 1) - _o[1]) // 32 + 1, ))
        else:
            _launch(14, (), _o, (((N - 1) - _o[0]) // 16 + 1, ((M - 1) - _o[1]) // 16 + 1, ))
