#!/usr/bin/env python3
"""Writes tiny hand-built TFLite files into --out (default .build/tflite/tiny) with the schema's object API
(ai_edge_litert.schema_py_generated: ModelT, SubGraphT, ...), for the operator cases the mediapipe models do not
cover, with LiteRT's outputs on seeded inputs (manifest.json), and files the importer must refuse:

- ops_*.tflite: one operator (or a short chain) each, float32, with the options the importer reads
  (fused activations, SAME/VALID, strides, dilations, masks, keep_dims, align_corners/half_pixel_centers).
- ops_int8.tflite: a full-integer chain between QUANTIZE and DEQUANTIZE (float in and out): per-channel int8
  conv, depthwise and dense weights, int32 biases, fused activations, ADD, AVERAGE_POOL, CONCATENATION, MEAN, RESHAPE,
  SOFTMAX; int8_<field>.tflite: the same with one bad quantization field (refused naming it); int16.tflite: int16
  activations (refused); ops_uint8.tflite: the older uint8 form (asymmetric uint8 weights).
- buffer_index.tflite: a tensor whose buffer index is past the buffer list, refused with the index.
- ops_sparse.tflite: a pruned weight stored sparse (DENSIFY) into a conv, then DEPTH_TO_SPACE; sparse_bad_index.tflite
  the same with a column index past the row, refused.
Hostile byte variants (truncations, lengths and vtable offsets past the end) are made in the Swift tests from
ops_conv.tflite. Nothing it writes is committed."""
import argparse, json, os, sys
import numpy as np
import flatbuffers
from ai_edge_litert import schema_py_generated as s
from ai_edge_litert.interpreter import Interpreter

OP = s.BuiltinOperator
OPTIONS = s.BuiltinOptions


class Builder:
    def __init__(self):
        self.model = s.ModelT()
        self.model.version = 3
        self.model.operatorCodes, self.model.buffers = [], [s.BufferT()]
        self.graph = s.SubGraphT()
        self.graph.tensors, self.graph.operators, self.graph.inputs, self.graph.outputs = [], [], [], []
        self.graph.name = "main"
        self.model.subgraphs = [self.graph]
        self.model.description = "make_tflite.py"

    def tensor(self, name, shape, data=None, dtype=s.TensorType.FLOAT32):
        t = s.TensorT()
        t.name, t.shape, t.type = name, list(shape), dtype
        t.buffer = 0
        if data is not None:
            b = s.BufferT()
            b.data = np.ascontiguousarray(data).view(np.uint8).ravel().tolist()
            self.model.buffers.append(b)
            t.buffer = len(self.model.buffers) - 1
        self.graph.tensors.append(t)
        return len(self.graph.tensors) - 1

    def const(self, name, array):
        a = np.asarray(array)
        dtype = {np.dtype(np.float32): s.TensorType.FLOAT32, np.dtype(np.int32): s.TensorType.INT32,
                 np.dtype(np.float16): s.TensorType.FLOAT16}[a.dtype]
        return self.tensor(name, a.shape, a, dtype)

    def op(self, code, inputs, outputs, options_type=0, options=None, custom=None, custom_options=None):
        key = (code, custom)
        codes = [(c.builtinCode, c.customCode) for c in self.model.operatorCodes]
        if key not in codes:
            c = s.OperatorCodeT()
            c.builtinCode, c.deprecatedBuiltinCode, c.version = code, min(code, 127), 1
            c.customCode = custom
            self.model.operatorCodes.append(c)
            codes.append(key)
        o = s.OperatorT()
        o.opcodeIndex = codes.index(key)
        o.inputs, o.outputs = list(inputs), list(outputs)
        o.builtinOptionsType, o.builtinOptions = options_type, options
        if custom_options is not None:
            o.customOptions = list(custom_options)
        self.graph.operators.append(o)

    def bytes(self):
        b = flatbuffers.Builder(1024)
        b.Finish(self.model.Pack(b), file_identifier=b"TFL3")
        return bytes(b.Output())


def options(cls, **fields):
    o = cls()
    for k, v in fields.items():
        setattr(o, k, v)
    return o


rng = np.random.default_rng(49)


def w(*shape):
    return rng.standard_normal(shape).astype(np.float32) * 0.5


def conv_file():
    """CONV_2D SAME stride 2 + RELU6 → DEPTHWISE (m = 2, dilation 2, VALID) → MAX_POOL SAME → RESHAPE →
    FULLY_CONNECTED + bias + RELU_N1_TO_1 → SOFTMAX (beta 0.5)."""
    m = Builder()
    x = m.tensor("input", [1, 9, 9, 3])
    c = m.tensor("conv", [1, 5, 5, 4])
    m.op(OP.CONV_2D, [x, m.const("conv_w", w(4, 3, 3, 3)), m.const("conv_b", w(4))], [c], OPTIONS.Conv2DOptions,
         options(s.Conv2DOptionsT, padding=s.Padding.SAME, strideW=2, strideH=2,
                 fusedActivationFunction=s.ActivationFunctionType.RELU6))
    d = m.tensor("depthwise", [1, 1, 3, 8])
    m.op(OP.DEPTHWISE_CONV_2D, [c, m.const("dw_w", w(1, 2, 2, 8)), m.const("dw_b", w(8))], [d],
         OPTIONS.DepthwiseConv2DOptions,
         options(s.DepthwiseConv2DOptionsT, padding=s.Padding.VALID, strideW=1, strideH=2, depthMultiplier=2,
                 dilationWFactor=2, dilationHFactor=2))
    p = m.tensor("pool", [1, 1, 2, 8])
    m.op(OP.MAX_POOL_2D, [d], [p], OPTIONS.Pool2DOptions,
         options(s.Pool2DOptionsT, padding=s.Padding.SAME, strideW=2, strideH=2, filterWidth=2, filterHeight=2))
    r = m.tensor("flat", [1, 16])
    m.op(OP.RESHAPE, [p, m.const("flat_shape", np.array([1, 16], np.int32))], [r])
    f = m.tensor("dense", [1, 5])
    m.op(OP.FULLY_CONNECTED, [r, m.const("fc_w", w(5, 16)), m.const("fc_b", w(5))], [f], OPTIONS.FullyConnectedOptions,
         options(s.FullyConnectedOptionsT, fusedActivationFunction=s.ActivationFunctionType.RELU_N1_TO_1))
    y = m.tensor("probabilities", [1, 5])
    m.op(OP.SOFTMAX, [f], [y], OPTIONS.SoftmaxOptions, options(s.SoftmaxOptionsT, beta=0.5))
    m.graph.inputs, m.graph.outputs = [0], [y]
    return m


def elementwise_file():
    """ADD (broadcast, RELU_N1_TO_1), SUB, MUL (RELU), DIV, MAXIMUM, MINIMUM, PRELU, LOGISTIC, TANH, RELU, RELU6,
    HARD_SWISH, CONCATENATION (axis −1), PADV2, AVERAGE_POOL_2D SAME, MEAN without keep_dims."""
    m = Builder()
    x = m.tensor("input", [1, 4, 6, 3])
    t = m.tensor("t", [1, 4, 6, 3])
    m.op(OP.ADD, [x, m.const("bias", w(3))], [t], OPTIONS.AddOptions,
         options(s.AddOptionsT, fusedActivationFunction=s.ActivationFunctionType.RELU_N1_TO_1))
    outs = [t]
    for i, (code, otype, ocls, arg) in enumerate([
            (OP.SUB, OPTIONS.SubOptions, s.SubOptionsT, w(1, 1, 6, 1)),
            (OP.MUL, OPTIONS.MulOptions, s.MulOptionsT, w(1, 4, 1, 3)),
            (OP.DIV, OPTIONS.DivOptions, s.DivOptionsT, (np.abs(w(3)) + 0.5).astype(np.float32)),
            (OP.MAXIMUM, 0, None, w(3)), (OP.MINIMUM, 0, None, w(1, 4, 6, 3)), (OP.PRELU, 0, None, w(1, 1, 3))]):
        o = m.tensor(f"binary{i}", [1, 4, 6, 3])
        opts = options(ocls, fusedActivationFunction=s.ActivationFunctionType.RELU) if code == OP.MUL else (ocls() if ocls else None)
        m.op(code, [x, m.const(f"arg{i}", arg)], [o], otype, opts)
        outs.append(o)
    for i, code in enumerate([OP.LOGISTIC, OP.TANH, OP.RELU, OP.RELU6, OP.HARD_SWISH]):
        o = m.tensor(f"unary{i}", [1, 4, 6, 3])
        m.op(code, [outs[-1] if i == 0 else x], [o])
        outs.append(o)
    cat = m.tensor("concat", [1, 4, 6, 3 * len(outs)])
    m.op(OP.CONCATENATION, outs, [cat], OPTIONS.ConcatenationOptions, options(s.ConcatenationOptionsT, axis=-1))
    pad = m.tensor("pad", [1, 5, 9, 3 * len(outs)])
    m.op(OP.PADV2, [cat, m.const("paddings", np.array([[0, 0], [1, 0], [1, 2], [0, 0]], np.int32)),
                    m.const("pad_value", np.array([0.25], np.float32))], [pad])
    avg = m.tensor("avg", [1, 3, 5, 3 * len(outs)])
    m.op(OP.AVERAGE_POOL_2D, [pad], [avg], OPTIONS.Pool2DOptions,
         options(s.Pool2DOptionsT, padding=s.Padding.SAME, strideW=2, strideH=2, filterWidth=3, filterHeight=3))
    mean = m.tensor("mean", [1, 3 * len(outs)])
    m.op(OP.MEAN, [avg, m.const("axes", np.array([1, 2], np.int32))], [mean], OPTIONS.ReducerOptions,
         options(s.ReducerOptionsT, keepDims=False))
    m.graph.inputs, m.graph.outputs = [x], [mean, avg]
    return m


def shapes_file():
    """RESIZE_BILINEAR (align_corners; half_pixel_centers; neither), RESIZE_NEAREST_NEIGHBOR (the same three),
    TRANSPOSE, SQUEEZE, SLICE, STRIDED_SLICE (masks, negative stride, shrink), TRANSPOSE_CONV SAME stride 2 + bias."""
    m = Builder()
    x = m.tensor("input", [1, 5, 7, 2])
    outs = []
    for i, (code, otype, ocls) in enumerate([(OP.RESIZE_BILINEAR, OPTIONS.ResizeBilinearOptions, s.ResizeBilinearOptionsT),
                                             (OP.RESIZE_NEAREST_NEIGHBOR, OPTIONS.ResizeNearestNeighborOptions,
                                              s.ResizeNearestNeighborOptionsT)]):
        for j, (align, half) in enumerate([(True, False), (False, True), (False, False)]):
            o = m.tensor(f"resize{i}{j}", [1, 8, 13, 2])
            m.op(code, [x, m.const(f"size{i}{j}", np.array([8, 13], np.int32))], [o], otype,
                 options(ocls, alignCorners=align, halfPixelCenters=half))
            outs.append(o)
    tr = m.tensor("transposed", [1, 2, 5, 7])
    m.op(OP.TRANSPOSE, [x, m.const("perm", np.array([0, 3, 1, 2], np.int32))], [tr])
    outs.append(tr)
    sl = m.tensor("slice", [1, 3, 7, 1])
    m.op(OP.SLICE, [x, m.const("begin", np.array([0, 1, 0, 1], np.int32)), m.const("size", np.array([1, 3, -1, 1], np.int32))], [sl])
    sq = m.tensor("squeezed", [3, 7])
    m.op(OP.SQUEEZE, [sl], [sq], OPTIONS.SqueezeOptions, options(s.SqueezeOptionsT, squeezeDims=[0, 3]))
    outs.append(sq)
    ss = m.tensor("strided", [1, 2, 2])
    m.op(OP.STRIDED_SLICE, [x, m.const("ss_begin", np.array([0, 4, 1, 1], np.int32)), m.const("ss_end", np.array([1, 0, 7, 2], np.int32)),
                            m.const("ss_strides", np.array([1, -2, 3, 1], np.int32))], [ss], OPTIONS.StridedSliceOptions,
         options(s.StridedSliceOptionsT, beginMask=0, endMask=0b0100, shrinkAxisMask=0b1000))
    outs.append(ss)
    tc = m.tensor("transpose_conv", [1, 10, 14, 3])
    m.op(OP.TRANSPOSE_CONV, [m.const("tc_shape", np.array([1, 10, 14, 3], np.int32)), m.const("tc_w", w(3, 3, 3, 2)), x,
                             m.const("tc_b", w(3))], [tc], OPTIONS.TransposeConvOptions,
         options(s.TransposeConvOptionsT, padding=s.Padding.SAME, strideW=2, strideH=2))
    outs.append(tc)
    m.graph.inputs, m.graph.outputs = [x], outs
    return m


def sparse_weight(m, name, dense, bad_index=False):
    """A float32 constant stored as TFLite does a pruned weight: the first dimensions dense, the last compressed
    (SPARSE_CSR: per row a segment of column indices), its buffer the non-zero values in that order."""
    rows = dense.reshape(-1, dense.shape[-1])
    segments, indices, values = [0], [], []
    for r in rows:
        nz = np.nonzero(r)[0]
        indices += nz.tolist()
        values += r[nz].tolist()
        segments.append(len(indices))
    if bad_index:
        indices[0] = dense.shape[-1] + 4
    t = m.tensor(name, dense.shape, np.array(values, np.float32))
    sp = s.SparsityParametersT()
    sp.traversalOrder, sp.blockMap = list(range(dense.ndim)), []
    sp.dimMetadata = []
    for k, size in enumerate(dense.shape):
        d = s.DimensionMetadataT()
        if k < dense.ndim - 1:
            d.format, d.denseSize = s.DimensionType.DENSE, size
        else:
            d.format = s.DimensionType.SPARSE_CSR
            d.arraySegmentsType, d.arraySegments = s.SparseIndexVector.Uint8Vector, options(s.Uint8VectorT, values=segments)
            d.arrayIndicesType, d.arrayIndices = s.SparseIndexVector.Uint8Vector, options(s.Uint8VectorT, values=indices)
        sp.dimMetadata.append(d)
    m.graph.tensors[t].sparsity = sp
    return t


def sparse_file(bad_index=False):
    """A pruned conv weight (about half zero) through DENSIFY into CONV_2D, then DEPTH_TO_SPACE (block 2)."""
    m = Builder()
    x = m.tensor("input", [1, 4, 4, 3])
    kernel = w(4, 1, 1, 3) * (rng.random((4, 1, 1, 3)) > 0.5)
    dense = m.tensor("conv_w_dense", [4, 1, 1, 3])
    m.op(OP.DENSIFY, [sparse_weight(m, "conv_w_sparse", kernel.astype(np.float32), bad_index)], [dense])
    c = m.tensor("conv", [1, 4, 4, 4])
    m.op(OP.CONV_2D, [x, dense, m.const("conv_b", w(4))], [c], OPTIONS.Conv2DOptions,
         options(s.Conv2DOptionsT, padding=s.Padding.VALID, strideW=1, strideH=1))
    y = m.tensor("depth_to_space", [1, 8, 8, 1])
    m.op(OP.DEPTH_TO_SPACE, [c], [y], OPTIONS.DepthToSpaceOptions, options(s.DepthToSpaceOptionsT, blockSize=2))
    m.graph.inputs, m.graph.outputs = [x], [y]
    return m


def quant(m, t, scales, zero_points, dim=0):
    qp = s.QuantizationParametersT()
    qp.scale, qp.zeroPoint, qp.quantizedDimension = list(scales), list(zero_points), dim
    m.graph.tensors[t].quantization = qp
    return t


def qtensor(m, name, shape, scale, zero_point, dtype=s.TensorType.INT8):
    return quant(m, m.tensor(name, shape, dtype=dtype), [scale], [zero_point])


def qweight(m, name, shape, dim, rng):
    """int8 codes with one scale per index of `dim` (zero points 0), as TFLite's quantizer writes weights."""
    codes = rng.integers(-127, 128, size=shape).astype(np.int8)
    scales = (rng.uniform(0.5, 1.5, size=shape[dim]) * 0.01).astype(np.float32)
    return quant(m, m.tensor(name, shape, codes, s.TensorType.INT8), scales, [0] * shape[dim], dim), scales


def int8_file():
    """A full-integer chain with float input and output: QUANTIZE → CONV_2D (per-channel int8 weights, int32 bias,
    fused RELU6 that clamps inside the codes) → DEPTHWISE_CONV_2D (per-channel, RELU implied by the zero point −128)
    → ADD (of it and an AVERAGE_POOL_2D of the conv: three scales) → CONCATENATION (XNNPACK wants one scale) → MEAN → RESHAPE → FULLY_CONNECTED →
    SOFTMAX (1/256, −128) → DEQUANTIZE."""
    m = Builder()
    r = np.random.default_rng(8)
    x = m.tensor("input", [1, 6, 6, 3])
    q = qtensor(m, "quantized", [1, 6, 6, 3], 0.02, 3)
    m.op(OP.QUANTIZE, [x], [q])
    w, ws = qweight(m, "conv_w", [4, 3, 3, 3], 0, r)
    b = quant(m, m.tensor("conv_b", [4], r.integers(-2000, 2000, size=4).astype(np.int32), s.TensorType.INT32),
              (0.02 * ws).astype(np.float32), [0] * 4)
    c = qtensor(m, "conv", [1, 6, 6, 4], 0.03, -20)
    m.op(OP.CONV_2D, [q, w, b], [c], OPTIONS.Conv2DOptions,
         options(s.Conv2DOptionsT, padding=s.Padding.SAME, strideW=1, strideH=1,
                 fusedActivationFunction=s.ActivationFunctionType.RELU6))
    dw, dws = qweight(m, "dw_w", [1, 3, 3, 4], 3, r)
    db = quant(m, m.tensor("dw_b", [4], r.integers(-500, 500, size=4).astype(np.int32), s.TensorType.INT32),
               (0.03 * dws).astype(np.float32), [0] * 4)
    d = qtensor(m, "depthwise", [1, 3, 3, 4], 0.02, -128)
    m.op(OP.DEPTHWISE_CONV_2D, [c, dw, db], [d], OPTIONS.DepthwiseConv2DOptions,
         options(s.DepthwiseConv2DOptionsT, padding=s.Padding.SAME, strideW=2, strideH=2, depthMultiplier=1,
                 fusedActivationFunction=s.ActivationFunctionType.RELU))
    pooled = qtensor(m, "pooled", [1, 3, 3, 4], 0.03, -20)
    m.op(OP.AVERAGE_POOL_2D, [c], [pooled], OPTIONS.Pool2DOptions,
         options(s.Pool2DOptionsT, padding=s.Padding.VALID, strideW=2, strideH=2, filterWidth=2, filterHeight=2))
    a = qtensor(m, "sum", [1, 3, 3, 4], 0.04, -10)
    m.op(OP.ADD, [d, pooled], [a], OPTIONS.AddOptions, options(s.AddOptionsT))
    cat = qtensor(m, "cat", [1, 3, 3, 8], 0.04, -10)
    m.op(OP.CONCATENATION, [a, a], [cat], OPTIONS.ConcatenationOptions, options(s.ConcatenationOptionsT, axis=3))
    mean = qtensor(m, "mean", [1, 1, 1, 8], 0.02, -30)
    m.op(OP.MEAN, [cat, m.const("axes", np.array([1, 2], np.int32))], [mean], OPTIONS.ReducerOptions,
         options(s.ReducerOptionsT, keepDims=True))
    flat = qtensor(m, "flat", [1, 8], 0.02, -30)
    m.op(OP.RESHAPE, [mean, m.const("flat_shape", np.array([1, 8], np.int32))], [flat])
    fw, fws = qweight(m, "fc_w", [5, 8], 0, r)
    fb = quant(m, m.tensor("fc_b", [5], r.integers(-300, 300, size=5).astype(np.int32), s.TensorType.INT32),
               (0.02 * fws).astype(np.float32), [0] * 5)
    f = qtensor(m, "dense", [1, 5], 0.05, 5)
    m.op(OP.FULLY_CONNECTED, [flat, fw, fb], [f], OPTIONS.FullyConnectedOptions, options(s.FullyConnectedOptionsT))
    sm = qtensor(m, "softmax", [1, 5], 1 / 256, -128)
    m.op(OP.SOFTMAX, [f], [sm], OPTIONS.SoftmaxOptions, options(s.SoftmaxOptionsT, beta=1.0))
    y = m.tensor("probabilities", [1, 5])
    m.op(OP.DEQUANTIZE, [sm], [y])
    m.graph.inputs, m.graph.outputs = [x], [y]
    return m


def uint8_file():
    """The older full-integer form, uint8 (float in and out): QUANTIZE → CONV_2D (uint8 weights with one scale and a
    zero point of 120, int32 bias, RELU6) → AVERAGE_POOL_2D → RESHAPE → FULLY_CONNECTED (uint8 weights, zero point 131)
    → DEQUANTIZE."""
    m = Builder()
    r = np.random.default_rng(9)
    U8 = s.TensorType.UINT8
    x = m.tensor("input", [1, 6, 6, 3])
    q = qtensor(m, "quantized", [1, 6, 6, 3], 0.02, 131, U8)
    m.op(OP.QUANTIZE, [x], [q])
    w = quant(m, m.tensor("conv_w", [4, 3, 3, 3], r.integers(0, 256, size=(4, 3, 3, 3)).astype(np.uint8), U8), [0.01], [120])
    b = quant(m, m.tensor("conv_b", [4], r.integers(-2000, 2000, size=4).astype(np.int32), s.TensorType.INT32),
              [np.float32(0.02) * np.float32(0.01)], [0])
    c = qtensor(m, "conv", [1, 6, 6, 4], 0.03, 10, U8)
    m.op(OP.CONV_2D, [q, w, b], [c], OPTIONS.Conv2DOptions,
         options(s.Conv2DOptionsT, padding=s.Padding.SAME, strideW=1, strideH=1,
                 fusedActivationFunction=s.ActivationFunctionType.RELU6))
    p = qtensor(m, "pooled", [1, 3, 3, 4], 0.03, 10, U8)
    m.op(OP.AVERAGE_POOL_2D, [c], [p], OPTIONS.Pool2DOptions,
         options(s.Pool2DOptionsT, padding=s.Padding.VALID, strideW=2, strideH=2, filterWidth=2, filterHeight=2))
    flat = qtensor(m, "flat", [1, 36], 0.03, 10, U8)
    m.op(OP.RESHAPE, [p, m.const("flat_shape", np.array([1, 36], np.int32))], [flat])
    fw = quant(m, m.tensor("fc_w", [5, 36], r.integers(0, 256, size=(5, 36)).astype(np.uint8), U8), [0.02], [131])
    fb = quant(m, m.tensor("fc_b", [5], r.integers(-300, 300, size=5).astype(np.int32), s.TensorType.INT32),
               [np.float32(0.03) * np.float32(0.02)], [0])
    f = qtensor(m, "dense", [1, 5], 0.05, 128, U8)
    m.op(OP.FULLY_CONNECTED, [flat, fw, fb], [f], OPTIONS.FullyConnectedOptions, options(s.FullyConnectedOptionsT))
    y = m.tensor("output", [1, 5])
    m.op(OP.DEQUANTIZE, [f], [y])
    m.graph.inputs, m.graph.outputs = [x], [y]
    return m


def int16_file():
    """A QUANTIZE to int16 activations (16x8 quantization), still refused."""
    m = Builder()
    x = m.tensor("input", [1, 4])
    q = qtensor(m, "quantized16", [1, 4], 0.001, 0, dtype=s.TensorType.INT16)
    y = m.tensor("output", [1, 4])
    m.op(OP.QUANTIZE, [x], [q])
    m.op(OP.DEQUANTIZE, [q], [y])
    m.graph.inputs, m.graph.outputs = [x], [y]
    return m


def hostile_int8_file(kind):
    """ops_int8 with one bad quantization field: the conv weights' scale vector one short ("scale_count"), a zero,
    NaN or negative activation scale, an activation zero point outside int8 ("zero_point")."""
    m = int8_file()
    t = m.graph.tensors
    if kind == "scale_count":
        t[2].quantization.scale = t[2].quantization.scale[:3]
    elif kind == "zero_scale":
        t[4].quantization.scale = [0.0]
    elif kind == "negative_scale":
        t[4].quantization.scale = [-0.03]
    elif kind == "nan_scale":
        t[4].quantization.scale = [float("nan")]
    elif kind == "zero_point":
        t[4].quantization.zeroPoint = [200]
    return m


def buffer_index_file():
    m = conv_file()
    m.graph.tensors[1].buffer = 99
    return m


def unsupported_file():
    """Two unsupported builtins and a custom op, for the one error listing them all."""
    m = Builder()
    x = m.tensor("input", [1, 16, 16, 1])
    a = m.tensor("s2d", [1, 8, 8, 4])
    m.op(OP.SPACE_TO_DEPTH, [x], [a], OPTIONS.SpaceToDepthOptions, options(s.SpaceToDepthOptionsT, blockSize=2))
    b = m.tensor("floor", [1, 8, 8, 4])
    m.op(OP.FLOOR, [a], [b])
    c = m.tensor("floor2", [1, 8, 8, 4])
    m.op(OP.FLOOR, [b], [c])
    d = m.tensor("custom", [1, 8, 8, 4])
    m.op(OP.CUSTOM, [c], [d], custom=b"MyOp")
    m.graph.inputs, m.graph.outputs = [x], [d]
    return m


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", default=".build/tflite/tiny")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    runs = []
    for name, make in [("ops_conv", conv_file), ("ops_elementwise", elementwise_file), ("ops_shapes", shapes_file),
                       ("ops_sparse", sparse_file), ("ops_int8", int8_file), ("ops_uint8", uint8_file)]:
        m = make()
        path = os.path.join(args.out, name + ".tflite")
        with open(path, "wb") as f:
            f.write(m.bytes())
        it = Interpreter(model_path=path)
        it.allocate_tensors()
        (inp,) = it.get_input_details()
        x = np.random.default_rng(7).standard_normal(inp["shape"]).astype(np.float32) * 2
        it.set_tensor(inp["index"], x)
        it.invoke()
        np.save(os.path.join(args.out, name + ".input.npy"), x)
        outputs = []
        for k, o in enumerate(it.get_output_details()):
            y = it.get_tensor(o["index"]).astype(np.float32)
            np.save(os.path.join(args.out, f"{name}.output{k}.npy"), y)
            outputs.append({"name": o["name"], "shape": list(map(int, y.shape)), "file": f"{name}.output{k}.npy"})
        runs.append({"model": name, "photo": "random", "input": {"name": inp["name"], "shape": list(map(int, x.shape)),
                                                                 "file": name + ".input.npy"}, "outputs": outputs})
    for name, make in [("int16", int16_file), ("buffer_index", buffer_index_file), ("unsupported", unsupported_file),
                       ("sparse_bad_index", lambda: sparse_file(bad_index=True)),
                       ("int8_scale_count", lambda: hostile_int8_file("scale_count")),
                       ("int8_zero_scale", lambda: hostile_int8_file("zero_scale")),
                       ("int8_nan_scale", lambda: hostile_int8_file("nan_scale")),
                       ("int8_negative_scale", lambda: hostile_int8_file("negative_scale")),
                       ("int8_zero_point", lambda: hostile_int8_file("zero_point"))]:
        with open(os.path.join(args.out, name + ".tflite"), "wb") as f:
            f.write(make().bytes())
    with open(os.path.join(args.out, "manifest.json"), "w") as f:
        json.dump({"runs": runs}, f, indent=1)


if __name__ == "__main__":
    main()
