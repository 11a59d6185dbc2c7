"""Cases of the differential suite where cmx disagrees with MLX and
should not: open work of issue 20, each id with what differs (the
suite's message shows both outcomes). A listed case must still
disagree (strict): when a fix makes it agree, drop its line. Cases
where cmx differs on purpose are in _mlx_diff.DIFFERENCES instead."""

KNOWN = {
    'binary/arctan2/complex64-complex64/(0, 3)-(3,)':
        'exception type: MLX ValueError, cmx TypeError',
    'binary/arctan2/complex64-float32/(2, 1)-(1, 4)':
        'exception type: MLX ValueError, cmx TypeError',
    'binary/arctan2/complex64-pyscalar/2.0':
        'exception type: MLX ValueError, cmx TypeError',
    'binary/arctan2/int32-complex64/()-(4,)':
        'exception type: MLX ValueError, cmx TypeError',
    'binary/arctan2/pyscalar-complex64/2.0':
        'exception type: MLX ValueError, cmx TypeError',
    'binary/bitwise_and/bfloat16-bfloat16/(3,)-(3,)':
        'exception type: MLX RuntimeError, cmx TypeError',
    'binary/bitwise_and/bfloat16-pyscalar/3':
        'exception type: MLX RuntimeError, cmx TypeError',
    'binary/bitwise_and/complex64-complex64/()-(4,)':
        'exception type: MLX RuntimeError, cmx TypeError',
    'binary/bitwise_and/complex64-float32/(2, 3)-(3,)':
        'exception type: MLX RuntimeError, cmx TypeError',
    'binary/bitwise_and/complex64-pyscalar/2.0':
        'exception type: MLX RuntimeError, cmx TypeError',
    'binary/bitwise_and/float16-bfloat16/(2, 1)-(1, 4)':
        'exception type: MLX RuntimeError, cmx TypeError',
    'binary/bitwise_and/float16-float16/(2, 3)-(2, 1)':
        'exception type: MLX RuntimeError, cmx TypeError',
    'binary/bitwise_and/float16-float32/(0, 3)-(3,)':
        'exception type: MLX RuntimeError, cmx TypeError',
    'binary/bitwise_and/float16-pyscalar/1.5':
        'exception type: MLX RuntimeError, cmx TypeError',
    'binary/bitwise_and/float32-float32/(2, 3)-(3,)':
        'exception type: MLX RuntimeError, cmx TypeError',
    'binary/bitwise_and/float32-pyscalar/2':
        'exception type: MLX RuntimeError, cmx TypeError',
    'binary/bitwise_and/float64-float32/()-(4,)':
        'exception type: MLX RuntimeError, cmx TypeError',
    'binary/bitwise_and/float64-float64/(2, 1)-(1, 4)':
        'exception type: MLX RuntimeError, cmx TypeError',
    'binary/bitwise_and/int32-complex64/(2, 1)-(1, 4)':
        'exception type: MLX RuntimeError, cmx TypeError',
    'binary/bitwise_and/int32-float32/(0, 3)-(3,)':
        'exception type: MLX RuntimeError, cmx TypeError',
    'binary/bitwise_and/int32-pyscalar/2.5':
        'exception type: MLX RuntimeError, cmx TypeError',
    'binary/bitwise_and/int64-uint64/(2, 3)-(3,)':
        'exception type: MLX RuntimeError, cmx TypeError',
    'binary/bitwise_and/int8-float16/(2, 3)-(2, 1)':
        'exception type: MLX RuntimeError, cmx TypeError',
    'binary/bitwise_and/pyscalar-bfloat16/3':
        'exception type: MLX RuntimeError, cmx TypeError',
    'binary/bitwise_and/pyscalar-complex64/2.0':
        'exception type: MLX RuntimeError, cmx TypeError',
    'binary/bitwise_and/pyscalar-float16/1.5':
        'exception type: MLX RuntimeError, cmx TypeError',
    'binary/bitwise_and/pyscalar-float32/2':
        'exception type: MLX RuntimeError, cmx TypeError',
    'binary/bitwise_and/pyscalar-int32/2.5':
        'exception type: MLX RuntimeError, cmx TypeError',
    'binary/bitwise_and/shape_mismatch':
        'exception type: MLX RuntimeError, cmx TypeError',
    'binary/bitwise_and/uint64-float32/(3,)-(3,)':
        'exception type: MLX RuntimeError, cmx TypeError',
    'binary/bitwise_or/bfloat16-bfloat16/(2, 3)-(3,)':
        'exception type: MLX RuntimeError, cmx TypeError',
    'binary/bitwise_or/bfloat16-pyscalar/3':
        'exception type: MLX RuntimeError, cmx TypeError',
    'binary/bitwise_or/complex64-complex64/(0, 3)-(3,)':
        'exception type: MLX RuntimeError, cmx TypeError',
    'binary/bitwise_or/complex64-float32/(2, 1)-(1, 4)':
        'exception type: MLX RuntimeError, cmx TypeError',
    'binary/bitwise_or/complex64-pyscalar/2.0':
        'exception type: MLX RuntimeError, cmx TypeError',
    'binary/bitwise_or/float16-bfloat16/()-(4,)':
        'exception type: MLX RuntimeError, cmx TypeError',
    'binary/bitwise_or/float16-float16/(3,)-(3,)':
        'exception type: MLX RuntimeError, cmx TypeError',
    'binary/bitwise_or/float16-float32/(2, 3)-(2, 1)':
        'exception type: MLX RuntimeError, cmx TypeError',
    'binary/bitwise_or/float16-pyscalar/1.5':
        'exception type: MLX RuntimeError, cmx TypeError',
    'binary/bitwise_or/float32-float32/(2, 1)-(1, 4)':
        'exception type: MLX RuntimeError, cmx TypeError',
    'binary/bitwise_or/float32-pyscalar/2':
        'exception type: MLX RuntimeError, cmx TypeError',
    'binary/bitwise_or/float64-float32/(0, 3)-(3,)':
        'exception type: MLX RuntimeError, cmx TypeError',
    'binary/bitwise_or/float64-float64/()-(4,)':
        'exception type: MLX RuntimeError, cmx TypeError',
    'binary/bitwise_or/int32-complex64/()-(4,)':
        'exception type: MLX RuntimeError, cmx TypeError',
    'binary/bitwise_or/int32-float32/(2, 3)-(2, 1)':
        'exception type: MLX RuntimeError, cmx TypeError',
    'binary/bitwise_or/int32-pyscalar/2.5':
        'exception type: MLX RuntimeError, cmx TypeError',
    'binary/bitwise_or/int64-uint64/(2, 1)-(1, 4)':
        'exception type: MLX RuntimeError, cmx TypeError',
    'binary/bitwise_or/int8-float16/(3,)-(3,)':
        'exception type: MLX RuntimeError, cmx TypeError',
    'binary/bitwise_or/pyscalar-bfloat16/3':
        'exception type: MLX RuntimeError, cmx TypeError',
    'binary/bitwise_or/pyscalar-complex64/2.0':
        'exception type: MLX RuntimeError, cmx TypeError',
    'binary/bitwise_or/pyscalar-float16/1.5':
        'exception type: MLX RuntimeError, cmx TypeError',
    'binary/bitwise_or/pyscalar-float32/2':
        'exception type: MLX RuntimeError, cmx TypeError',
    'binary/bitwise_or/pyscalar-int32/2.5':
        'exception type: MLX RuntimeError, cmx TypeError',
    'binary/bitwise_or/shape_mismatch':
        'exception type: MLX RuntimeError, cmx TypeError',
    'binary/bitwise_or/uint64-float32/(2, 3)-(3,)':
        'exception type: MLX RuntimeError, cmx TypeError',
    'binary/bitwise_xor/bfloat16-bfloat16/(2, 1)-(1, 4)':
        'exception type: MLX RuntimeError, cmx TypeError',
    'binary/bitwise_xor/bfloat16-pyscalar/3':
        'exception type: MLX RuntimeError, cmx TypeError',
    'binary/bitwise_xor/complex64-complex64/(2, 3)-(2, 1)':
        'exception type: MLX RuntimeError, cmx TypeError',
    'binary/bitwise_xor/complex64-float32/()-(4,)':
        'exception type: MLX RuntimeError, cmx TypeError',
    'binary/bitwise_xor/complex64-pyscalar/2.0':
        'exception type: MLX RuntimeError, cmx TypeError',
    'binary/bitwise_xor/float16-bfloat16/(0, 3)-(3,)':
        'exception type: MLX RuntimeError, cmx TypeError',
    'binary/bitwise_xor/float16-float16/(2, 3)-(3,)':
        'exception type: MLX RuntimeError, cmx TypeError',
    'binary/bitwise_xor/float16-float32/(3,)-(3,)':
        'exception type: MLX RuntimeError, cmx TypeError',
    'binary/bitwise_xor/float16-pyscalar/1.5':
        'exception type: MLX RuntimeError, cmx TypeError',
    'binary/bitwise_xor/float32-float32/()-(4,)':
        'exception type: MLX RuntimeError, cmx TypeError',
    'binary/bitwise_xor/float32-pyscalar/2':
        'exception type: MLX RuntimeError, cmx TypeError',
    'binary/bitwise_xor/float64-float32/(2, 3)-(2, 1)':
        'exception type: MLX RuntimeError, cmx TypeError',
    'binary/bitwise_xor/float64-float64/(0, 3)-(3,)':
        'exception type: MLX RuntimeError, cmx TypeError',
    'binary/bitwise_xor/int32-complex64/(0, 3)-(3,)':
        'exception type: MLX RuntimeError, cmx TypeError',
    'binary/bitwise_xor/int32-float32/(3,)-(3,)':
        'exception type: MLX RuntimeError, cmx TypeError',
    'binary/bitwise_xor/int32-pyscalar/2.5':
        'exception type: MLX RuntimeError, cmx TypeError',
    'binary/bitwise_xor/int64-uint64/()-(4,)':
        'exception type: MLX RuntimeError, cmx TypeError',
    'binary/bitwise_xor/int8-float16/(2, 3)-(3,)':
        'exception type: MLX RuntimeError, cmx TypeError',
    'binary/bitwise_xor/pyscalar-bfloat16/3':
        'exception type: MLX RuntimeError, cmx TypeError',
    'binary/bitwise_xor/pyscalar-complex64/2.0':
        'exception type: MLX RuntimeError, cmx TypeError',
    'binary/bitwise_xor/pyscalar-float16/1.5':
        'exception type: MLX RuntimeError, cmx TypeError',
    'binary/bitwise_xor/pyscalar-float32/2':
        'exception type: MLX RuntimeError, cmx TypeError',
    'binary/bitwise_xor/pyscalar-int32/2.5':
        'exception type: MLX RuntimeError, cmx TypeError',
    'binary/bitwise_xor/shape_mismatch':
        'exception type: MLX RuntimeError, cmx TypeError',
    'binary/bitwise_xor/uint64-float32/(2, 1)-(1, 4)':
        'exception type: MLX RuntimeError, cmx TypeError',
    'binary/divmod/float16':
        'results differ',
    'binary/divmod/float32':
        'results differ',
    'binary/divmod/int32':
        'results differ',
    'binary/divmod/int8':
        'results differ',
    'binary/divmod/uint8':
        'results differ',
    'binary/floor_divide/complex64-complex64/(2, 3)-(2, 1)':
        'cmx raises TypeError ([floor_divide] Not supported for complex64.); MLX returns a result',
    'binary/floor_divide/complex64-float32/()-(4,)':
        'cmx raises TypeError ([floor_divide] Not supported for complex64.); MLX returns a result',
    'binary/floor_divide/complex64-pyscalar/2.0':
        'cmx raises TypeError ([floor_divide] Not supported for complex64.); MLX returns a result',
    'binary/floor_divide/int32-complex64/(0, 3)-(3,)':
        'cmx raises TypeError ([floor_divide] Not supported for complex64.); MLX returns a result',
    'binary/floor_divide/pyscalar-bfloat16/3':
        'result values differ',
    'binary/floor_divide/pyscalar-complex64/2.0':
        'cmx raises TypeError ([floor_divide] Not supported for complex64.); MLX returns a result',
    'binary/left_shift/bfloat16-bfloat16/()-(4,)':
        'exception type: MLX RuntimeError, cmx TypeError',
    'binary/left_shift/bfloat16-pyscalar/3':
        'exception type: MLX RuntimeError, cmx TypeError',
    'binary/left_shift/complex64-complex64/(3,)-(3,)':
        'exception type: MLX RuntimeError, cmx TypeError',
    'binary/left_shift/complex64-float32/(0, 3)-(3,)':
        'exception type: MLX RuntimeError, cmx TypeError',
    'binary/left_shift/complex64-pyscalar/2.0':
        'exception type: MLX RuntimeError, cmx TypeError',
    'binary/left_shift/float16-bfloat16/(2, 3)-(2, 1)':
        'exception type: MLX RuntimeError, cmx TypeError',
    'binary/left_shift/float16-float16/(2, 1)-(1, 4)':
        'exception type: MLX RuntimeError, cmx TypeError',
    'binary/left_shift/float16-float32/(2, 3)-(3,)':
        'exception type: MLX RuntimeError, cmx TypeError',
    'binary/left_shift/float16-pyscalar/1.5':
        'exception type: MLX RuntimeError, cmx TypeError',
    'binary/left_shift/float32-float32/(0, 3)-(3,)':
        'exception type: MLX RuntimeError, cmx TypeError',
    'binary/left_shift/float32-pyscalar/2':
        'exception type: MLX RuntimeError, cmx TypeError',
    'binary/left_shift/float64-float32/(3,)-(3,)':
        'exception type: MLX RuntimeError, cmx TypeError',
    'binary/left_shift/float64-float64/(2, 3)-(2, 1)':
        'exception type: MLX RuntimeError, cmx TypeError',
    'binary/left_shift/int32-complex64/(2, 3)-(2, 1)':
        'exception type: MLX RuntimeError, cmx TypeError',
    'binary/left_shift/int32-float32/(2, 3)-(3,)':
        'exception type: MLX RuntimeError, cmx TypeError',
    'binary/left_shift/int32-pyscalar/2.5':
        'exception type: MLX RuntimeError, cmx TypeError',
    'binary/left_shift/int64-uint64/(0, 3)-(3,)':
        'exception type: MLX RuntimeError, cmx TypeError',
    'binary/left_shift/int8-float16/(2, 1)-(1, 4)':
        'exception type: MLX RuntimeError, cmx TypeError',
    'binary/left_shift/pyscalar-bfloat16/3':
        'exception type: MLX RuntimeError, cmx TypeError',
    'binary/left_shift/pyscalar-complex64/2.0':
        'exception type: MLX RuntimeError, cmx TypeError',
    'binary/left_shift/pyscalar-float16/1.5':
        'exception type: MLX RuntimeError, cmx TypeError',
    'binary/left_shift/pyscalar-float32/2':
        'exception type: MLX RuntimeError, cmx TypeError',
    'binary/left_shift/pyscalar-int32/2.5':
        'exception type: MLX RuntimeError, cmx TypeError',
    'binary/left_shift/pyscalar-int64/-1':
        'result values differ',
    'binary/left_shift/shape_mismatch':
        'exception type: MLX RuntimeError, cmx TypeError',
    'binary/left_shift/uint64-float32/()-(4,)':
        'exception type: MLX RuntimeError, cmx TypeError',
    'binary/logaddexp/complex64-complex64/(2, 3)-(2, 1)':
        'cmx raises TypeError ([logaddexp] Not supported for complex64.); MLX returns a result',
    'binary/logaddexp/complex64-float32/()-(4,)':
        'cmx raises TypeError ([logaddexp] Not supported for complex64.); MLX returns a result',
    'binary/logaddexp/complex64-pyscalar/2.0':
        'cmx raises TypeError ([logaddexp] Not supported for complex64.); MLX returns a result',
    'binary/logaddexp/float64-float32/(2, 3)-(2, 1)':
        'result values differ',
    'binary/logaddexp/int32-complex64/(0, 3)-(3,)':
        'cmx raises TypeError ([logaddexp] Not supported for complex64.); MLX returns a result',
    'binary/logaddexp/pyscalar-complex64/2.0':
        'cmx raises TypeError ([logaddexp] Not supported for complex64.); MLX returns a result',
    'binary/power/int16-int16/(3,)-(3,)':
        'result values differ',
    'binary/power/int64-int64/(2, 1)-(1, 4)':
        'result values differ',
    'binary/power/int64-pyscalar/-1':
        'result values differ',
    'binary/power/pyscalar-int64/-1':
        'result values differ',
    'binary/remainder/bool_-bool_/(2, 3)-(2, 1)':
        'result values differ',
    'binary/remainder/complex64-complex64/(3,)-(3,)':
        'exception type: MLX ValueError, cmx TypeError',
    'binary/remainder/complex64-float32/(0, 3)-(3,)':
        'exception type: MLX ValueError, cmx TypeError',
    'binary/remainder/complex64-pyscalar/2.0':
        'exception type: MLX ValueError, cmx TypeError',
    'binary/remainder/int32-complex64/(2, 3)-(2, 1)':
        'exception type: MLX ValueError, cmx TypeError',
    'binary/remainder/pyscalar-bool_/True':
        'result values differ',
    'binary/remainder/pyscalar-complex64/2.0':
        'exception type: MLX ValueError, cmx TypeError',
    'binary/remainder/pyscalar-int64/-1':
        'result values differ',
    'binary/remainder/pyscalar-int8/3':
        'result values differ',
    'binary/remainder/pyscalar-uint8/2':
        'result values differ',
    'binary/right_shift/bfloat16-bfloat16/(0, 3)-(3,)':
        'exception type: MLX RuntimeError, cmx TypeError',
    'binary/right_shift/bfloat16-pyscalar/3':
        'exception type: MLX RuntimeError, cmx TypeError',
    'binary/right_shift/complex64-complex64/(2, 3)-(3,)':
        'exception type: MLX RuntimeError, cmx TypeError',
    'binary/right_shift/complex64-float32/(2, 3)-(2, 1)':
        'exception type: MLX RuntimeError, cmx TypeError',
    'binary/right_shift/complex64-pyscalar/2.0':
        'exception type: MLX RuntimeError, cmx TypeError',
    'binary/right_shift/float16-bfloat16/(3,)-(3,)':
        'exception type: MLX RuntimeError, cmx TypeError',
    'binary/right_shift/float16-float16/()-(4,)':
        'exception type: MLX RuntimeError, cmx TypeError',
    'binary/right_shift/float16-float32/(2, 1)-(1, 4)':
        'exception type: MLX RuntimeError, cmx TypeError',
    'binary/right_shift/float16-pyscalar/1.5':
        'exception type: MLX RuntimeError, cmx TypeError',
    'binary/right_shift/float32-float32/(2, 3)-(2, 1)':
        'exception type: MLX RuntimeError, cmx TypeError',
    'binary/right_shift/float32-pyscalar/2':
        'exception type: MLX RuntimeError, cmx TypeError',
    'binary/right_shift/float64-float32/(2, 3)-(3,)':
        'exception type: MLX RuntimeError, cmx TypeError',
    'binary/right_shift/float64-float64/(3,)-(3,)':
        'exception type: MLX RuntimeError, cmx TypeError',
    'binary/right_shift/int32-complex64/(3,)-(3,)':
        'exception type: MLX RuntimeError, cmx TypeError',
    'binary/right_shift/int32-float32/(2, 1)-(1, 4)':
        'exception type: MLX RuntimeError, cmx TypeError',
    'binary/right_shift/int32-pyscalar/2.5':
        'exception type: MLX RuntimeError, cmx TypeError',
    'binary/right_shift/int64-uint64/(2, 3)-(2, 1)':
        'exception type: MLX RuntimeError, cmx TypeError',
    'binary/right_shift/int8-float16/()-(4,)':
        'exception type: MLX RuntimeError, cmx TypeError',
    'binary/right_shift/pyscalar-bfloat16/3':
        'exception type: MLX RuntimeError, cmx TypeError',
    'binary/right_shift/pyscalar-complex64/2.0':
        'exception type: MLX RuntimeError, cmx TypeError',
    'binary/right_shift/pyscalar-float16/1.5':
        'exception type: MLX RuntimeError, cmx TypeError',
    'binary/right_shift/pyscalar-float32/2':
        'exception type: MLX RuntimeError, cmx TypeError',
    'binary/right_shift/pyscalar-int32/2.5':
        'exception type: MLX RuntimeError, cmx TypeError',
    'binary/right_shift/shape_mismatch':
        'exception type: MLX RuntimeError, cmx TypeError',
    'binary/right_shift/uint64-float32/(0, 3)-(3,)':
        'exception type: MLX RuntimeError, cmx TypeError',
    'create/arange/bool':
        'exception type: MLX ValueError, cmx TypeError',
    'create/array/[9223372036854775808]':
        'exception type: MLX RuntimeError, cmx ValueError',
    'create/array_dtype/[-1]/uint32':
        'MLX raises RuntimeError (std::bad_cast); cmx returns a result',
    'create/array_dtype/[1099511627776]/int32':
        'MLX raises RuntimeError (std::bad_cast); cmx returns a result',
    'create/array_of_arrays_mixed':
        'cmx raises ValueError (Initialization encountered extra dimension.); MLX returns a result',
    'create/full/bool_':
        'result dtype: MLX float32, cmx bool',
    'create/full/complex64':
        'result dtype: MLX float32, cmx complex64',
    'create/full/int16':
        'result dtype: MLX float32, cmx int16',
    'create/full/int32':
        'result dtype: MLX float32, cmx int32',
    'create/full/int64':
        'result dtype: MLX float32, cmx int64',
    'create/full/int8':
        'result dtype: MLX float32, cmx int8',
    'create/full/uint16':
        'result dtype: MLX float32, cmx uint16',
    'create/full/uint32':
        'result dtype: MLX float32, cmx uint32',
    'create/full/uint64':
        'result dtype: MLX float32, cmx uint64',
    'create/full/uint8':
        'result dtype: MLX float32, cmx uint8',
    'device/buffer_size':
        'results differ',
    'dtype/result_type_scalar/1':
        'MLX raises ValueError ([result_type] Inputs must be arrays or dtypes.); cmx returns a result',
    'dtype/result_type_scalar/1j':
        'MLX raises ValueError ([result_type] Inputs must be arrays or dtypes.); cmx returns a result',
    'dtype/result_type_scalar/2.5':
        'MLX raises ValueError ([result_type] Inputs must be arrays or dtypes.); cmx returns a result',
    'dtype/result_type_scalar/True':
        'MLX raises ValueError ([result_type] Inputs must be arrays or dtypes.); cmx returns a result',
    'index/get/0d':
        'exception type: MLX ValueError, cmx IndexError',
    'index/get/float_index':
        'exception type: MLX ValueError, cmx IndexError',
    'index/get/str_index':
        'exception type: MLX ValueError, cmx IndexError',
    'index/get/too_many':
        'exception type: MLX ValueError, cmx IndexError',
    'index/set/0d':
        'exception type: MLX ValueError, cmx IndexError',
    'index/take/0':
        'cmx raises RuntimeError ([gather] Index 3 is out of bounds for axis 0 with size 3.); MLX returns a result',
    'linalg/matmul/int32/(0, 3)x(3, 2)':
        'exception type: MLX ValueError, cmx TypeError',
    'linalg/matmul/int32/(2, 1, 3, 4)x(3, 4, 2)':
        'exception type: MLX ValueError, cmx TypeError',
    'linalg/matmul/int32/(2, 2, 3)x(3, 4)':
        'exception type: MLX ValueError, cmx TypeError',
    'linalg/matmul/int32/(2, 3)x(3,)':
        'exception type: MLX ValueError, cmx TypeError',
    'linalg/matmul/int32/(3, 0)x(0, 2)':
        'exception type: MLX ValueError, cmx TypeError',
    'linalg/matmul/int32/(3, 4)x(4, 2)':
        'exception type: MLX ValueError, cmx TypeError',
    'linalg/matmul/int32/(4,)x(4, 3)':
        'exception type: MLX ValueError, cmx TypeError',
    'linalg/matmul/int32/(4,)x(4,)':
        'exception type: MLX ValueError, cmx TypeError',
    'linalg/vecdot/complex64/(2, 3)/(3,)/-1':
        'MLX raises ValueError ([vecdot] axis is out of bounds.); cmx returns a result',
    'linalg/vecdot/complex64/(2,)/(2,)/3':
        'exception type: MLX IndexError, cmx ValueError',
    'linalg/vecdot/float32/(2, 3)/(3,)/-1':
        'MLX raises ValueError ([vecdot] axis is out of bounds.); cmx returns a result',
    'linalg/vecdot/float32/(2,)/(2,)/3':
        'exception type: MLX IndexError, cmx ValueError',
    'print/device':
        'results differ',
    'reduce/all/bfloat16/(3, 4)/(0, 2)/False':
        'exception type: MLX IndexError, cmx ValueError',
    'reduce/all/bfloat16/(4,)/1/True':
        'exception type: MLX IndexError, cmx ValueError',
    'reduce/all/float16/(4,)/1/True':
        'exception type: MLX IndexError, cmx ValueError',
    'reduce/all/float32/(2, 3, 4)/3/True':
        'exception type: MLX IndexError, cmx ValueError',
    'reduce/all/float32/(3, 4)/(0, 2)/False':
        'exception type: MLX IndexError, cmx ValueError',
    'reduce/all/float64/(2, 3, 4)/3/True':
        'exception type: MLX IndexError, cmx ValueError',
    'reduce/all/int32/()/-1/True':
        'exception type: MLX IndexError, cmx ValueError',
    'reduce/all/int64/()/-1/True':
        'exception type: MLX IndexError, cmx ValueError',
    'reduce/all/int8/(4,)/3/False':
        'exception type: MLX IndexError, cmx ValueError',
    'reduce/all/uint16/()/1/False':
        'exception type: MLX IndexError, cmx ValueError',
    'reduce/all/uint32/()/1/False':
        'exception type: MLX IndexError, cmx ValueError',
    'reduce/all/uint64/(4,)/3/False':
        'exception type: MLX IndexError, cmx ValueError',
    'reduce/any/complex64/(4,)/1/True':
        'exception type: MLX IndexError, cmx ValueError',
    'reduce/any/float16/(4,)/3/False':
        'exception type: MLX IndexError, cmx ValueError',
    'reduce/any/float32/()/-1/True':
        'exception type: MLX IndexError, cmx ValueError',
    'reduce/any/float64/()/-1/True':
        'exception type: MLX IndexError, cmx ValueError',
    'reduce/any/int16/()/1/False':
        'exception type: MLX IndexError, cmx ValueError',
    'reduce/any/int32/()/1/False':
        'exception type: MLX IndexError, cmx ValueError',
    'reduce/any/int64/(4,)/3/False':
        'exception type: MLX IndexError, cmx ValueError',
    'reduce/any/uint16/()/3/True':
        'exception type: MLX IndexError, cmx ValueError',
    'reduce/any/uint8/()/3/True':
        'exception type: MLX IndexError, cmx ValueError',
    'reduce/argmax/bool_/(2, 3, 4)/3/False':
        'exception type: MLX IndexError, cmx ValueError',
    'reduce/argmax/complex64/(0, 3)/1/False':
        'MLX raises ValueError ([argmax] Cannot argmax reduce zero size array.); cmx returns a result',
    'reduce/argmax/float32/()/0/True':
        'exception type: MLX IndexError, cmx ValueError',
    'reduce/argmax/float64/()/0/True':
        'exception type: MLX IndexError, cmx ValueError',
    'reduce/argmax/float64/(0, 3)/1/False':
        'MLX raises ValueError ([argmax] Cannot argmax reduce zero size array.); cmx returns a result',
    'reduce/argmax/int16/()/0/False':
        'exception type: MLX IndexError, cmx ValueError',
    'reduce/argmax/int32/()/0/False':
        'exception type: MLX IndexError, cmx ValueError',
    'reduce/argmax/uint16/()/None/True':
        'MLX raises ValueError (cannot create std::vector larger than max_size()); cmx returns a result',
    'reduce/argmax/uint8/()/None/True':
        'MLX raises ValueError (cannot create std::vector larger than max_size()); cmx returns a result',
    'reduce/argmax/uint8/(2, 3, 4)/3/False':
        'exception type: MLX IndexError, cmx ValueError',
    'reduce/argmin/bfloat16/(3, 4)/3/False':
        'exception type: MLX IndexError, cmx ValueError',
    'reduce/argmin/complex64/()/0/False':
        'exception type: MLX IndexError, cmx ValueError',
    'reduce/argmin/complex64/(0, 3)/-1/True':
        'MLX raises ValueError ([argmin] Cannot argmin reduce zero size array.); cmx returns a result',
    'reduce/argmin/float16/(0, 3)/1/False':
        'MLX raises ValueError ([argmin] Cannot argmin reduce zero size array.); cmx returns a result',
    'reduce/argmin/float32/(3, 4)/3/False':
        'exception type: MLX IndexError, cmx ValueError',
    'reduce/argmin/float64/()/0/False':
        'exception type: MLX IndexError, cmx ValueError',
    'reduce/argmin/int32/()/0/True':
        'exception type: MLX IndexError, cmx ValueError',
    'reduce/argmin/int64/()/0/True':
        'exception type: MLX IndexError, cmx ValueError',
    'reduce/argmin/int64/(0, 3)/1/False':
        'MLX raises ValueError ([argmin] Cannot argmin reduce zero size array.); cmx returns a result',
    'reduce/argmin/uint16/()/0/False':
        'exception type: MLX IndexError, cmx ValueError',
    'reduce/argmin/uint32/()/0/False':
        'exception type: MLX IndexError, cmx ValueError',
    'reduce/logsumexp/bool_/(2, 3, 4)/None/True':
        'result values differ',
    'reduce/logsumexp/complex64/(3, 4)/None/True':
        'cmx raises TypeError ([logsumexp] not supported for dtype complex64.); MLX returns a result',
    'reduce/logsumexp/complex64/(4,)/3/False':
        'exception type: MLX IndexError, cmx ValueError',
    'reduce/logsumexp/float64/(4,)/3/False':
        'exception type: MLX IndexError, cmx ValueError',
    'reduce/logsumexp/uint16/(4,)/(0, 1)/False':
        'exception type: MLX IndexError, cmx ValueError',
    'reduce/logsumexp/uint32/(4,)/(0, 1)/False':
        'exception type: MLX IndexError, cmx ValueError',
    'reduce/logsumexp/uint64/(2, 3, 4)/(0, 2)/False':
        'result values differ',
    'reduce/max/bfloat16/()/(0, 2)/True':
        'exception type: MLX IndexError, cmx ValueError',
    'reduce/max/bfloat16/(0, 3)/3/False':
        'exception type: MLX IndexError, cmx ValueError',
    'reduce/max/bool_/()/-1/True':
        'exception type: MLX IndexError, cmx ValueError',
    'reduce/max/float16/()/(0, 2)/True':
        'exception type: MLX IndexError, cmx ValueError',
    'reduce/max/float32/(0, 3)/3/False':
        'exception type: MLX IndexError, cmx ValueError',
    'reduce/max/uint16/(3, 4)/(0, 2)/False':
        'exception type: MLX IndexError, cmx ValueError',
    'reduce/max/uint16/(4,)/1/True':
        'exception type: MLX IndexError, cmx ValueError',
    'reduce/max/uint32/(2, 3, 4)/3/True':
        'exception type: MLX IndexError, cmx ValueError',
    'reduce/max/uint32/(3, 4)/(0, 2)/False':
        'exception type: MLX IndexError, cmx ValueError',
    'reduce/max/uint64/(2, 3, 4)/3/True':
        'exception type: MLX IndexError, cmx ValueError',
    'reduce/max/uint8/(4,)/1/True':
        'exception type: MLX IndexError, cmx ValueError',
    'reduce/mean/bool_/(4,)/3/False':
        'exception type: MLX IndexError, cmx ValueError',
    'reduce/mean/complex64/()/(0, 2)/True':
        'exception type: MLX IndexError, cmx ValueError',
    'reduce/mean/int16/(3, 4)/(0, 2)/False':
        'exception type: MLX IndexError, cmx ValueError',
    'reduce/mean/int16/(4,)/1/True':
        'exception type: MLX IndexError, cmx ValueError',
    'reduce/mean/int32/(2, 3, 4)/3/True':
        'exception type: MLX IndexError, cmx ValueError',
    'reduce/mean/int32/(3, 4)/(0, 2)/False':
        'exception type: MLX IndexError, cmx ValueError',
    'reduce/mean/int64/(2, 3, 4)/3/True':
        'exception type: MLX IndexError, cmx ValueError',
    'reduce/mean/int8/(4,)/1/True':
        'exception type: MLX IndexError, cmx ValueError',
    'reduce/mean/uint32/()/-1/True':
        'exception type: MLX IndexError, cmx ValueError',
    'reduce/mean/uint64/()/-1/True':
        'exception type: MLX IndexError, cmx ValueError',
    'reduce/mean/uint8/(4,)/3/False':
        'exception type: MLX IndexError, cmx ValueError',
    'reduce/min/bfloat16/()/(0, 1)/False':
        'exception type: MLX IndexError, cmx ValueError',
    'reduce/min/bool_/(2, 3, 4)/3/True':
        'exception type: MLX IndexError, cmx ValueError',
    'reduce/min/complex64/(3, 4)/3/True':
        'exception type: MLX IndexError, cmx ValueError',
    'reduce/min/complex64/(4,)/(0, 2)/False':
        'exception type: MLX IndexError, cmx ValueError',
    'reduce/min/float32/()/(0, 1)/False':
        'exception type: MLX IndexError, cmx ValueError',
    'reduce/min/float64/(4,)/(0, 2)/False':
        'exception type: MLX IndexError, cmx ValueError',
    'reduce/min/int16/()/(0, 2)/True':
        'exception type: MLX IndexError, cmx ValueError',
    'reduce/min/int16/(0, 3)/3/False':
        'exception type: MLX IndexError, cmx ValueError',
    'reduce/min/int32/(0, 3)/3/False':
        'exception type: MLX IndexError, cmx ValueError',
    'reduce/min/int8/()/(0, 2)/True':
        'exception type: MLX IndexError, cmx ValueError',
    'reduce/prod/bfloat16/(3, 4)/3/True':
        'exception type: MLX IndexError, cmx ValueError',
    'reduce/prod/complex64/(4,)/(0, 1)/True':
        'exception type: MLX IndexError, cmx ValueError',
    'reduce/prod/float16/(3, 4)/3/True':
        'exception type: MLX IndexError, cmx ValueError',
    'reduce/prod/float16/(4,)/(0, 2)/False':
        'exception type: MLX IndexError, cmx ValueError',
    'reduce/prod/float32/()/0/True':
        'exception type: MLX IndexError, cmx ValueError',
    'reduce/prod/float64/()/0/True':
        'exception type: MLX IndexError, cmx ValueError',
    'reduce/prod/int16/()/(0, 1)/False':
        'exception type: MLX IndexError, cmx ValueError',
    'reduce/prod/int32/()/(0, 1)/False':
        'exception type: MLX IndexError, cmx ValueError',
    'reduce/prod/int64/(4,)/(0, 2)/False':
        'exception type: MLX IndexError, cmx ValueError',
    'reduce/prod/uint16/()/(0, 2)/True':
        'exception type: MLX IndexError, cmx ValueError',
    'reduce/prod/uint16/(0, 3)/3/False':
        'exception type: MLX IndexError, cmx ValueError',
    'reduce/prod/uint32/(0, 3)/3/False':
        'exception type: MLX IndexError, cmx ValueError',
    'reduce/prod/uint8/()/(0, 2)/True':
        'exception type: MLX IndexError, cmx ValueError',
    'reduce/std/bfloat16/(4,)/(0, 1)/False':
        'exception type: MLX IndexError, cmx ValueError',
    'reduce/std/bool_/(0, 3)/3/True':
        'exception type: MLX IndexError, cmx ValueError',
    'reduce/std/complex64/()/3/True':
        'exception type: MLX IndexError, cmx ValueError',
    'reduce/std/complex64/(2, 3, 4)/(0, 2)/False':
        'result dtype: MLX float32, cmx complex64',
    'reduce/std/float16/()/0/False':
        'exception type: MLX IndexError, cmx ValueError',
    'reduce/std/float32/(4,)/(0, 1)/False':
        'exception type: MLX IndexError, cmx ValueError',
    'reduce/std/int16/(3, 4)/3/False':
        'exception type: MLX IndexError, cmx ValueError',
    'reduce/std/int16/(4,)/(0, 2)/True':
        'exception type: MLX IndexError, cmx ValueError',
    'reduce/std/int32/(3, 4)/3/False':
        'exception type: MLX IndexError, cmx ValueError',
    'reduce/std/int64/()/0/False':
        'exception type: MLX IndexError, cmx ValueError',
    'reduce/std/int8/(4,)/(0, 2)/True':
        'exception type: MLX IndexError, cmx ValueError',
    'reduce/std/uint32/()/(0, 1)/True':
        'exception type: MLX IndexError, cmx ValueError',
    'reduce/std/uint64/()/(0, 1)/True':
        'exception type: MLX IndexError, cmx ValueError',
    'reduce/sum/bfloat16/(4,)/(0, 1)/True':
        'exception type: MLX IndexError, cmx ValueError',
    'reduce/sum/complex64/()/3/False':
        'exception type: MLX IndexError, cmx ValueError',
    'reduce/sum/float16/(4,)/(0, 1)/True':
        'exception type: MLX IndexError, cmx ValueError',
    'reduce/sum/float64/()/3/False':
        'exception type: MLX IndexError, cmx ValueError',
    'reduce/sum/int16/(3, 4)/3/True':
        'exception type: MLX IndexError, cmx ValueError',
    'reduce/sum/int32/()/0/True':
        'exception type: MLX IndexError, cmx ValueError',
    'reduce/sum/int64/()/0/True':
        'exception type: MLX IndexError, cmx ValueError',
    'reduce/sum/int8/(3, 4)/3/True':
        'exception type: MLX IndexError, cmx ValueError',
    'reduce/sum/int8/(4,)/(0, 2)/False':
        'exception type: MLX IndexError, cmx ValueError',
    'reduce/sum/uint16/()/(0, 1)/False':
        'exception type: MLX IndexError, cmx ValueError',
    'reduce/sum/uint32/()/(0, 1)/False':
        'exception type: MLX IndexError, cmx ValueError',
    'reduce/sum/uint64/(4,)/(0, 2)/False':
        'exception type: MLX IndexError, cmx ValueError',
    'reduce/var/bfloat16/()/3/True':
        'exception type: MLX IndexError, cmx ValueError',
    'reduce/var/bool_/()/(0, 1)/True':
        'exception type: MLX IndexError, cmx ValueError',
    'reduce/var/complex64/(2, 3, 4)/(0, 1)/True':
        'result dtype: MLX float32, cmx complex64',
    'reduce/var/complex64/(3, 4)/-1/False':
        'result dtype: MLX float32, cmx complex64',
    'reduce/var/float16/()/3/True':
        'exception type: MLX IndexError, cmx ValueError',
    'reduce/var/int16/(4,)/(0, 1)/False':
        'exception type: MLX IndexError, cmx ValueError',
    'reduce/var/int32/(4,)/(0, 1)/False':
        'exception type: MLX IndexError, cmx ValueError',
    'reduce/var/int8/()/0/False':
        'exception type: MLX IndexError, cmx ValueError',
    'reduce/var/uint16/(3, 4)/3/False':
        'exception type: MLX IndexError, cmx ValueError',
    'reduce/var/uint16/(4,)/(0, 2)/True':
        'exception type: MLX IndexError, cmx ValueError',
    'reduce/var/uint32/(3, 4)/3/False':
        'exception type: MLX IndexError, cmx ValueError',
    'reduce/var/uint64/()/0/False':
        'exception type: MLX IndexError, cmx ValueError',
    'reduce/var/uint8/(4,)/(0, 2)/True':
        'exception type: MLX IndexError, cmx ValueError',
    'scan/logcumsumexp/complex64/(2, 3, 2)/None/True/True':
        'cmx raises ValueError ([logcumsumexp] Not supported for complex inputs.); MLX returns a result',
    'scan/logcumsumexp/float64/(3, 4)/0/False/True':
        'result values differ',
    'shape/broadcast_arrays':
        'results differ',
    "shape/concatenate/('float32', 'float32')/3":
        'exception type: MLX IndexError, cmx ValueError',
    'shape/expand_dims/4':
        'exception type: MLX IndexError, cmx ValueError',
    'shape/moveaxis/0/3':
        'exception type: MLX IndexError, cmx ValueError',
    'shape/roll/(1, 2)/None':
        'cmx raises ValueError ([roll] Rolling the flattened array takes one shift, got 2.); MLX returns a result',
    'shape/squeeze/5':
        'exception type: MLX IndexError, cmx ValueError',
    "shape/stack/('float32', 'float32')/3":
        'exception type: MLX IndexError, cmx ValueError',
    'shape/swapaxes/0/3':
        'exception type: MLX IndexError, cmx ValueError',
    'shape/unstack':
        'results differ',
    'transform/async_eval_in_grad':
        'MLX raises ValueError ([async_eval] Not allowed inside a graph transformation.); cmx returns a result',
    'transform/grad_index_along':
        'MLX raises ValueError ([gather_axis] Cannot calculate VJP with respect to indices. Use stop_g); cmx returns a result',
    'transform/grad_index_argnum':
        'MLX raises ValueError ([gather] Cannot calculate VJP with respect to indices. Use stop_gradie); cmx returns a result',
    'transform/grad_index_vjp':
        'MLX raises ValueError ([gather] Cannot calculate VJP with respect to indices. Use stop_gradie); cmx returns a result',
    'transform/grad_masked_scatter':
        'MLX raises ValueError ([masked_scatter] Cannot calculate VJP with respect to mask. Use stop_g); cmx returns a result',
    'transform/jvp_int_mul/int32':
        'results differ',
    'transform/jvp_int_mul/int64':
        'results differ',
    'transform/jvp_int_mul/uint8':
        'results differ',
    'transform/jvp_int_sum/int32':
        'results differ',
    'transform/jvp_int_sum/int64':
        'results differ',
    'transform/jvp_int_sum/uint8':
        'results differ',
    'transform/jvp_nondiff/divmod':
        'results differ',
    'transform/jvp_nondiff/equal':
        'results differ',
    'transform/jvp_nondiff/greater':
        'results differ',
    'transform/jvp_nondiff/isnan':
        'results differ',
    'transform/vjp_complex/abs':
        'results differ',
    'transform/vjp_complex/cos':
        'results differ',
    'transform/vjp_complex/div':
        'results differ',
    'transform/vjp_complex/exp':
        'results differ',
    'transform/vjp_complex/imag':
        'results differ',
    'transform/vjp_complex/log':
        'results differ',
    'transform/vjp_complex/matmul':
        'results differ',
    'transform/vjp_complex/mul':
        'results differ',
    'transform/vjp_complex/sin':
        'results differ',
    'transform/vjp_complex/sqrt':
        'results differ',
    'transform/vjp_complex/square':
        'results differ',
    'transform/vmap_bad_axis':
        'exception type: MLX IndexError, cmx ValueError',
    'transform/vmap_masked_scatter':
        'cmx raises ValueError ([eval] Attempting to eval an array during function transformations lik); MLX returns a result',
    'transform/vmap_reduce/cummax':
        'exception type: MLX IndexError, cmx ValueError',
    'transform/vmap_reduce/cumsum':
        'exception type: MLX IndexError, cmx ValueError',
    'transform/vmap_reduce/logsumexp':
        'exception type: MLX IndexError, cmx ValueError',
    'transform/vmap_reduce/max':
        'exception type: MLX IndexError, cmx ValueError',
    'transform/vmap_reduce/softmax':
        'exception type: MLX IndexError, cmx ValueError',
    'transform/vmap_reduce/sort':
        'exception type: MLX IndexError, cmx ValueError',
    'unary/bitwise_invert/bfloat16/()':
        'exception type: MLX ValueError, cmx TypeError',
    'unary/bitwise_invert/complex64/(2, 3, 4)':
        'exception type: MLX ValueError, cmx TypeError',
    'unary/bitwise_invert/float16/(4, 1)':
        'exception type: MLX ValueError, cmx TypeError',
    'unary/bitwise_invert/float32/(5,)':
        'exception type: MLX ValueError, cmx TypeError',
    'unary/bitwise_invert/float32/special':
        'exception type: MLX ValueError, cmx TypeError',
    'unary/bitwise_invert/float64/(3, 4)':
        'exception type: MLX ValueError, cmx TypeError',
    'unary/ceil/complex64/(2, 3, 4)':
        'exception type: MLX ValueError, cmx TypeError',
    'unary/cos/float64/(4, 1)':
        'result values differ',
    'unary/erf/complex64/(2, 3, 4)':
        'exception type: MLX ValueError, cmx TypeError',
    'unary/erf/float64/(3, 4)':
        'result values differ',
    'unary/erfinv/complex64/(0,)':
        'exception type: MLX ValueError, cmx TypeError',
    'unary/erfinv/float64/(2, 3, 4)':
        'result values differ',
    'unary/exp/float64/(3, 4)':
        'result values differ',
    'unary/expm1/complex64/(0,)':
        'MLX raises ValueError ([expm1] Not supported for complex64.); cmx returns a result',
    'unary/floor/complex64/(3, 4)':
        'exception type: MLX ValueError, cmx TypeError',
    'unary/nan_to_num/complex64/(4, 1)':
        'exception type: MLX ValueError, cmx TypeError',
    'unary/nan_to_num/float64/(0,)':
        'MLX raises ValueError ([nan_to_num] Does not yet support given type: float64.); cmx returns a result',
    'unary/negative/bool_/(3, 4)':
        'exception type: MLX ValueError, cmx TypeError',
    'unary/round/complex64/(4, 1)':
        'cmx raises TypeError ([round] Not supported for complex64.); MLX returns a result',
    'unary/round_dec/float64/1':
        'result values differ',
    'unary/round_dec/float64/2':
        'result values differ',
    'unary/sigmoid/complex64/(5,)':
        'MLX raises ValueError ([sigmoid] Not supported for complex64.); cmx returns a result',
    'unary/sigmoid/float64/()':
        'result values differ',
    'unary/sign/float32/special':
        'result values differ',
    'unary/trunc/complex64/(0,)':
        'exception type: MLX ValueError, cmx TypeError',
}
