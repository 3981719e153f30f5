def select(B, C, H, W):
    if not ((((B >= 0) and (C >= 0)) and (H >= 0)) and (W >= 0)):
        return -1
    if (B == 1):
        return 0
    if True:
        return 1
    return -1


def spill_sizes(B, C, H, W):
    return ()


def variant_0(_launch, B, C, H, W):
    if (((C >= 1) and (H >= 2)) and (W >= 2)):
        _o = (0, 0, 0, )
        _launch(0, (), _o, (((C - 1) - _o[0]) // 2 + 1, (((H // 2) - 1) - _o[1]) // 8 + 1, (((W // 2) - 1) - _o[2]) // 16 + 1, ))


def variant_1(_launch, B, C, H, W):
    if ((((B >= 1) and (C >= 1)) and (H >= 2)) and (W >= 2)):
        _o = (0, 0, 0, )
        _launch(1, (), _o, (((C - 1) - _o[0]) // 2 + 1, (((H // 2) - 1) - _o[1]) // 8 + 1, (((W // 2) - 1) - _o[2]) // 16 + 1, ))
