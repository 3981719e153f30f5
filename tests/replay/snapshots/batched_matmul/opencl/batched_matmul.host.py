def select(B, N, K, M):
    if not ((((B >= 0) and (N >= 1)) and (K >= 1)) and (M >= 1)):
        return -1
    if (B == 1):
        return 0
    if ((((B >= 1) and ((N % 48) == 0)) and ((K % 256) == 0)) and ((M % 256) == 0)):
        return 1
    if ((B >= 1) and (M >= 96)):
        return 2
    if (((B >= 1) and (M <= 95)) or (B == 0)):
        return 3
    if True:
        return 4
    return -1


def spill_sizes(B, N, K, M):
    return ()


def variant_0(_launch, B, N, K, M):
    if True:
        _o = (0, 0, )
        _launch(0, (), _o, (((N - 1) - _o[0]) // 64 + 1, ((M - 1) - _o[1]) // 64 + 1, ))


def variant_1(_launch, B, N, K, M):
    if True:
        _o = (0, 0, 0, )
        _launch(1, (), _o, (((B - 1) - _o[0]) // 1 + 1, ((N - 1) - _o[1]) // 64 + 1, ((M - 1) - _o[2]) // 64 + 1, ))


def variant_2(_launch, B, N, K, M):
    if True:
        _o = (0, 0, 0, )
        _launch(2, (), _o, (((B - 1) - _o[0]) // 1 + 1, ((N - 1) - _o[1]) // 64 + 1, ((M - 1) - _o[2]) // 64 + 1, ))


def variant_3(_launch, B, N, K, M):
    if ((B >= 1) and (M <= 95)):
        _o = (0, 0, 0, )
        _launch(3, (), _o, (((B - 1) - _o[0]) // 1 + 1, ((N - 1) - _o[1]) // 64 + 1, ((M - 1) - _o[2]) // 64 + 1, ))


def variant_4(_launch, B, N, K, M):
    if (B >= 1):
        _o = (0, 0, 0, )
        _launch(4, (), _o, (((B - 1) - _o[0]) // 1 + 1, ((N - 1) - _o[1]) // 64 + 1, ((M - 1) - _o[2]) // 64 + 1, ))
