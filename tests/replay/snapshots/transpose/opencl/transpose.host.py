def select(N, M):
    if not ((N >= 0) and (M >= 0)):
        return -1
    if (N == 1):
        return 0
    if ((((N >= 16) and (M >= 16)) and ((N % 16) == 0)) and ((M % 16) == 0)):
        return 1
    if ((N >= 16) and (M >= 16)):
        return 2
    if (((N >= 16) and (M <= 15)) or (N <= 15)):
        return 3
    if True:
        return 4
    return -1


def spill_sizes(N, M):
    return ()


def variant_0(_launch, N, M):
    if (M >= 1):
        _o = (0, )
        _launch(0, (), _o, (((M - 1) - _o[0]) // 256 + 1, ))


def variant_1(_launch, N, M):
    if True:
        _o = (0, 0, )
        _launch(1, (), _o, (((N - 1) - _o[0]) // 16 + 1, ((M - 1) - _o[1]) // 16 + 1, ))


def variant_2(_launch, N, M):
    if True:
        _o = (0, 0, )
        _launch(2, (), _o, (((N - 1) - _o[0]) // 16 + 1, ((M - 1) - _o[1]) // 16 + 1, ))


def variant_3(_launch, N, M):
    if ((((N >= 16) and (M >= 1)) and (M <= 15)) or (((N >= 1) and (N <= 15)) and (M >= 1))):
        _o = (0, 0, )
        _launch(3, (), _o, (((N - 1) - _o[0]) // 16 + 1, ((M - 1) - _o[1]) // 16 + 1, ))


def variant_4(_launch, N, M):
    if ((N >= 1) and (M >= 1)):
        _o = (0, 0, )
        _launch(4, (), _o, (((N - 1) - _o[0]) // 16 + 1, ((M - 1) - _o[1]) // 16 + 1, ))
