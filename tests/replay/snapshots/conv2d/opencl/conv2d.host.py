def select(B, C, H, W, F, KH, KW):
    if not (((((((B >= 0) and (C >= 0)) and (F >= 0)) and (KH >= 1)) and (H >= KH)) and (KW >= 1)) and (W >= KW)):
        return -1
    if (B == 1):
        return 0
    if ((((((B >= 1) and (C >= 64)) and (F >= 112)) and ((C % 64) == 0)) and ((F % 112) == 0)) and ((((W - KW) + 1) % 32) == 0)):
        return 1
    if ((((B >= 1) and (C >= 64)) and (F >= 112)) and (W >= (KW + 31))):
        return 2
    if True:
        return 3
    return -1


def spill_sizes(B, C, H, W, F, KH, KW):
    return ()


def variant_0(_launch, B, C, H, W, F, KH, KW):
    if (F >= 1):
        _o = (0, 0, 0, )
        if (((F - 1) - _o[0]) // 1 + 1) * (((H - KH) - _o[1]) // 64 + 1) * (((W - KW) - _o[2]) // 64 + 1) >= _UNITS:
            _launch(0, (), _o, (((F - 1) - _o[0]) // 1 + 1, ((H - KH) - _o[1]) // 64 + 1, ((W - KW) - _o[2]) // 64 + 1, ))
        elif (((F - 1) - _o[0]) // 1 + 1) * (((H - KH) - _o[1]) // 32 + 1) * (((W - KW) - _o[2]) // 32 + 1) >= _UNITS:
            _launch(1, (), _o, (((F - 1) - _o[0]) // 1 + 1, ((H - KH) - _o[1]) // 32 + 1, ((W - KW) - _o[2]) // 32 + 1, ))
        else:
            if (4 * 1 * 16 * max(1, (KH + 7)) * max(1, (W if ((KW + 15) >= W) else (KW + 15)))) + (4 * 2 * 16 * max(1, KH) * max(1, KW)) <= _LOCAL_LIMIT:
                _launch(2, (), _o, (((F - 1) - _o[0]) // 2 + 1, ((H - KH) - _o[1]) // 8 + 1, ((W - KW) - _o[2]) // 16 + 1, ), (4 * 1 * 16 * max(1, (KH + 7)) * max(1, (W if ((KW + 15) >= W) else (KW + 15))), 4 * 2 * 16 * max(1, KH) * max(1, KW), ))
            else:
                _launch(3, (), _o, (((F - 1) - _o[0]) // 2 + 1, ((H - KH) - _o[1]) // 8 + 1, ((W - KW) - _o[2]) // 16 + 1, ))


def variant_1(_launch, B, C, H, W, F, KH, KW):
    if True:
        _o = (0, 0, 0, )
        if (((H - KH) - _o[0]) // 1 + 1) * (((F - 1) - _o[1]) // 64 + 1) * (((W - KW) - _o[2]) // 64 + 1) >= _UNITS:
            _launch(4, (), _o, (((H - KH) - _o[0]) // 1 + 1, ((F - 1) - _o[1]) // 64 + 1, ((W - KW) - _o[2]) // 64 + 1, ))
        elif (((H - KH) - _o[0]) // 1 + 1) * (((F - 1) - _o[1]) // 32 + 1) * (((W - KW) - _o[2]) // 32 + 1) >= _UNITS:
            _launch(5, (), _o, (((H - KH) - _o[0]) // 1 + 1, ((F - 1) - _o[1]) // 32 + 1, ((W - KW) - _o[2]) // 32 + 1, ))
        else:
            if (4 * 1 * 16 * max(1, (KH + 1)) * max(1, (KW + 15))) + (4 * 8 * 16 * max(1, KH) * max(1, KW)) <= _LOCAL_LIMIT:
                _launch(6, (), _o, (((H - KH) - _o[0]) // 2 + 1, ((F - 1) - _o[1]) // 8 + 1, ((W - KW) - _o[2]) // 16 + 1, ), (4 * 1 * 16 * max(1, (KH + 1)) * max(1, (KW + 15)), 4 * 8 * 16 * max(1, KH) * max(1, KW), ))
            else:
                _launch(7, (), _o, (((H - KH) - _o[0]) // 2 + 1, ((F - 1) - _o[1]) // 8 + 1, ((W - KW) - _o[2]) // 16 + 1, ))


def variant_2(_launch, B, C, H, W, F, KH, KW):
    if True:
        _o = (0, 0, 0, )
        if (((H - KH) - _o[0]) // 1 + 1) * (((F - 1) - _o[1]) // 64 + 1) * (((W - KW) - _o[2]) // 64 + 1) >= _UNITS:
            _launch(8, (), _o, (((H - KH) - _o[0]) // 1 + 1, ((F - 1) - _o[1]) // 64 + 1, ((W - KW) - _o[2]) // 64 + 1, ))
        elif (((H - KH) - _o[0]) // 1 + 1) * (((F - 1) - _o[1]) // 32 + 1) * (((W - KW) - _o[2]) // 32 + 1) >= _UNITS:
            _launch(9, (), _o, (((H - KH) - _o[0]) // 1 + 1, ((F - 1) - _o[1]) // 32 + 1, ((W - KW) - _o[2]) // 32 + 1, ))
        else:
            if (4 * 1 * 16 * max(1, (KH + 1)) * max(1, (KW + 15))) + (4 * 8 * 16 * max(1, KH) * max(1, KW)) <= _LOCAL_LIMIT:
                _launch(10, (), _o, (((H - KH) - _o[0]) // 2 + 1, ((F - 1) - _o[1]) // 8 + 1, ((W - KW) - _o[2]) // 16 + 1, ), (4 * 1 * 16 * max(1, (KH + 1)) * max(1, (KW + 15)), 4 * 8 * 16 * max(1, KH) * max(1, KW), ))
            else:
                _launch(11, (), _o, (((H - KH) - _o[0]) // 2 + 1, ((F - 1) - _o[1]) // 8 + 1, ((W - KW) - _o[2]) // 16 + 1, ))


def variant_3(_launch, B, C, H, W, F, KH, KW):
    if (((B >= 1) and (F >= 1)) or (((B >= 1) and (C >= 1)) and (F >= 1))):
        _o = (0, 0, 0, )
        if (((H - KH) - _o[0]) // 1 + 1) * (((F - 1) - _o[1]) // 64 + 1) * (((W - KW) - _o[2]) // 64 + 1) >= _UNITS:
            _launch(12, (), _o, (((H - KH) - _o[0]) // 1 + 1, ((F - 1) - _o[1]) // 64 + 1, ((W - KW) - _o[2]) // 64 + 1, ))
        elif (((H - KH) - _o[0]) // 1 + 1) * (((F - 1) - _o[1]) // 32 + 1) * (((W - KW) - _o[2]) // 32 + 1) >= _UNITS:
            _launch(13, (), _o, (((H - KH) - _o[0]) // 1 + 1, ((F - 1) - _o[1]) // 32 + 1, ((W - KW) - _o[2]) // 32 + 1, ))
        else:
            if (4 * 1 * 16 * max(1, (KH + 1)) * max(1, (W if ((KW + 15) >= W) else (KW + 15)))) + (4 * 8 * 16 * max(1, KH) * max(1, KW)) <= _LOCAL_LIMIT:
                _launch(14, (), _o, (((H - KH) - _o[0]) // 2 + 1, ((F - 1) - _o[1]) // 8 + 1, ((W - KW) - _o[2]) // 16 + 1, ), (4 * 1 * 16 * max(1, (KH + 1)) * max(1, (W if ((KW + 15) >= W) else (KW + 15))), 4 * 8 * 16 * max(1, KH) * max(1, KW), ))
            else:
                _launch(15, (), _o, (((H - KH) - _o[0]) // 2 + 1, ((F - 1) - _o[1]) // 8 + 1, ((W - KW) - _o[2]) // 16 + 1, ))
