"""Writes recurrent networks exported by real PyTorch, with onnxruntime's outputs (run from the repository root):

    python3 -m venv --system-site-packages /tmp/torchenv && /tmp/torchenv/bin/pip install torch
    /tmp/torchenv/bin/python Tests/Fixtures/onnx/make_recurrent.py

TorchScript exporter (`dynamo=False`), opset 17, eval mode, seeded weights and inputs:
- torch_lstm: nn.LSTM(10 → 16, 2 layers, bidirectional, batch_first) and a Linear head; outputs the head's
  (B, T, 5), h_n and c_n (4, B, 16); the sequence axis is dynamic.
- torch_gru: nn.GRU(10 → 12, 2 layers, bidirectional, batch_first) and a Linear head; outputs (B, T, 5) and h_n.
- torch_lstm_stream: a one-layer nn.LSTM(8 → 16) whose state comes in and goes out as graph inputs and outputs (a
  streaming voice-activity detector's `state`), run on two chunks: the second chunk's state inputs are the
  first's outputs.
Each goes to Tests/Fixtures/onnx/recurrent/<name>.onnx with its inputs and onnxruntime's outputs (checked here
against torch's within 1e-5) as raw little-endian float32 files, described in recurrent/manifest.json (the format
of ../manifest.json). The tests need neither torch nor onnxruntime.

Four single layers made with onnx.helper cover what torch never exports, against onnxruntime alone:
- onnx_lstm_functions: bidirectional LSTM, HardSigmoid/ScaledTanh/Softsign and Elu/Softplus/Affine with their α
  and β, clip, peepholes, sequence_lens, initial_h and initial_c given as constants.
- onnx_lstm_input_forget: reverse LSTM, input_forget, initial_h a graph input; Y and Y_c.
- onnx_gru_linear_before_reset: bidirectional GRU, linear_before_reset, LeakyRelu/ThresholdedRelu and
  Sigmoid/Relu, sequence_lens, initial_h a graph input; Y, Y_h.
(onnxruntime runs layout 0 only: layout 1 is checked by the ONNX backend's batchwise cases, make_conformance.py.)
- onnx_rnn_functions: bidirectional RNN, Softplus and Elu, clip, sequence_lens.

It also writes the invalid LSTM/GRU/RNN files the importer must refuse (recurrent/bad_<why>.onnx, made with
onnx.helper; ONNXRefusalTests names each one's message).
"""
import json
import os

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper
import torch
from torch import nn

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "recurrent")
OPSET = 17


class Tagger(nn.Module):
    """A bidirectional two-layer recurrent encoder with a per-step head (an OCR recogniser's shape)."""
    def __init__(self, cell, inputs=10, hidden=16, classes=5):
        super().__init__()
        self.rnn = cell(inputs, hidden, num_layers=2, bidirectional=True, batch_first=True)
        self.head = nn.Linear(2 * hidden, classes)

    def forward(self, x):
        y, state = self.rnn(x)
        if isinstance(state, tuple):
            return (self.head(y),) + state
        return self.head(y), state


class Stream(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.LSTM(8, 16)

    def forward(self, x, h, c):
        y, (h, c) = self.rnn(x, (h, c))
        return torch.sigmoid(y), h, c


def export(name, net, args, input_names, output_names, dynamic):
    path = os.path.join(HERE, name + ".onnx")
    torch.onnx.export(net, args, path, input_names=input_names, output_names=output_names, opset_version=OPSET,
                      dynamo=False, do_constant_folding=True, dynamic_axes=dynamic)
    return ort.InferenceSession(path, providers=["CPUExecutionProvider"])


def record(name, suffix, names, arrays, outputs, session):
    """Writes one run's inputs and onnxruntime's outputs; returns the manifest case."""
    feeds = {n: a.numpy() for n, a in zip(names, arrays)}
    got = session.run(None, feeds)
    case = {"model": name + ".onnx", "inputs": [], "outputs": []}
    for n, a in feeds.items():
        f = f"{name}{suffix}.in.{n}.f32"
        a.astype("<f4").tofile(os.path.join(HERE, f))
        case["inputs"].append({"name": n, "shape": list(a.shape), "file": f})
    for o, t, r in zip(session.get_outputs(), outputs, got):
        np.testing.assert_allclose(r, t.detach().numpy(), rtol=1e-5, atol=1e-5)
        f = f"{name}{suffix}.out.{o.name}.f32"
        r.astype("<f4").tofile(os.path.join(HERE, f))
        case["outputs"].append({"name": o.name, "shape": list(r.shape), "file": f})
    return case, got


def bad_layer(name, op="LSTM", hidden=4, gates=4, inputs=3, directions=1, w_rows=None, b_len=None,
              computed_w=False, **attributes):
    """One X (5, 2, 3) → op → Y_h model whose weights or attributes are wrong as the keywords say."""
    rng = np.random.default_rng(7)
    w = rng.standard_normal((directions, w_rows or gates * hidden, inputs)).astype(np.float32)
    r = rng.standard_normal((directions, gates * hidden, hidden)).astype(np.float32)
    b = rng.standard_normal((directions, b_len or 2 * gates * hidden)).astype(np.float32)
    graph_inputs = [helper.make_tensor_value_info("X", TensorProto.FLOAT, [5, 2, inputs])]
    inits = [numpy_helper.from_array(r, "R"), numpy_helper.from_array(b, "B")]
    if computed_w:
        graph_inputs.append(helper.make_tensor_value_info("W", TensorProto.FLOAT, list(w.shape)))
    else:
        inits.append(numpy_helper.from_array(w, "W"))
    node = helper.make_node(op, ["X", "W", "R", "B"], ["", "Y_h"], name="rnn", **{"hidden_size": hidden, **attributes})
    graph = helper.make_graph([node], name, graph_inputs,
                              [helper.make_tensor_value_info("Y_h", TensorProto.FLOAT, None)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    onnx.save(model, os.path.join(HERE, f"bad_{name}.onnx"))


def refusals():
    bad_layer("computed_w", computed_w=True)
    bad_layer("hidden_size", hidden_size=5)
    bad_layer("w_rows", w_rows=12)
    bad_layer("bias_length", b_len=30)
    bad_layer("activation", op="GRU", gates=3, activations=["Sigmoid", "Swish"])
    bad_layer("direction", op="RNN", gates=1, direction="backward")
    bad_layer("activation_count", op="RNN", gates=1, activations=["Tanh", "Tanh", "Relu"])
    bad_layer("layout", op="GRU", gates=3, layout=2)


def layer(name, op, hidden, inputs, steps, batch, directions, outputs, constant_states=(), input_states=(),
          lengths=None, peepholes=False, layout=0, **attributes):
    """One seeded ONNX layer; returns (model path, the feeds, onnxruntime's outputs)."""
    rng = np.random.default_rng(len(name) * 7919)
    gates = {"LSTM": 4, "GRU": 3, "RNN": 1}[op]
    scale = 1 / np.sqrt(hidden)
    w = (rng.uniform(-scale, scale, (directions, gates * hidden, inputs)) * 2).astype(np.float32)
    r = (rng.uniform(-scale, scale, (directions, gates * hidden, hidden)) * 2).astype(np.float32)
    b = rng.uniform(-0.5, 0.5, (directions, 2 * gates * hidden)).astype(np.float32)
    inits = [numpy_helper.from_array(w, "W"), numpy_helper.from_array(r, "R"), numpy_helper.from_array(b, "B")]
    node_inputs = ["X", "W", "R", "B", "", "", "", ""]
    x_shape = [steps, batch, inputs] if layout == 0 else [batch, steps, inputs]
    state_shape = [directions, batch, hidden] if layout == 0 else [batch, directions, hidden]
    feeds = {"X": rng.standard_normal(x_shape).astype(np.float32)}
    graph_inputs = [helper.make_tensor_value_info("X", TensorProto.FLOAT, x_shape)]
    if lengths is not None:
        inits.append(numpy_helper.from_array(np.array(lengths, dtype=np.int32), "lens"))
        node_inputs[4] = "lens"
    for i, state in [(5, "initial_h"), (6, "initial_c")]:
        if state in constant_states:
            inits.append(numpy_helper.from_array(rng.standard_normal(state_shape).astype(np.float32) * 0.5, state))
            node_inputs[i] = state
        if state in input_states:
            feeds[state] = rng.standard_normal(state_shape).astype(np.float32) * 0.5
            graph_inputs.append(helper.make_tensor_value_info(state, TensorProto.FLOAT, state_shape))
            node_inputs[i] = state
    if peepholes:
        inits.append(numpy_helper.from_array(rng.uniform(-0.5, 0.5, (directions, 3 * hidden)).astype(np.float32), "P"))
        node_inputs[7] = "P"
    while node_inputs[-1] == "":
        node_inputs.pop()
    node = helper.make_node(op, node_inputs, outputs, name=name, hidden_size=hidden, layout=layout, **attributes)
    graph = helper.make_graph([node], name, graph_inputs,
                              [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outputs if o], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])
    path = os.path.join(HERE, name + ".onnx")
    onnx.save(model, path)
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    return session, feeds


def layers():
    """The onnx.helper layers, each a manifest case with onnxruntime's outputs."""
    specs = [
        ("onnx_lstm_functions", "LSTM", dict(hidden=6, inputs=5, steps=5, batch=2, directions=2, outputs=["Y", "Y_h", "Y_c"],
         constant_states=("initial_h", "initial_c"), lengths=[5, 3], peepholes=True, direction="bidirectional", clip=2.0,
         activations=["HardSigmoid", "ScaledTanh", "Softsign", "Elu", "Softplus", "Affine"],
         activation_alpha=[0.3, 0.8, 0.9, 0.7], activation_beta=[0.45, 1.3, 0.2])),
        ("onnx_lstm_input_forget", "LSTM", dict(hidden=5, inputs=4, steps=6, batch=3, directions=1, outputs=["Y", "", "Y_c"],
         input_states=("initial_h",), direction="reverse", input_forget=1)),
        ("onnx_gru_linear_before_reset", "GRU", dict(hidden=7, inputs=4, steps=5, batch=3, directions=2, outputs=["Y", "Y_h"],
         input_states=("initial_h",), lengths=[2, 5, 4], direction="bidirectional", linear_before_reset=1,
         activations=["LeakyRelu", "ThresholdedRelu", "Sigmoid", "Relu"], activation_alpha=[0.2, 0.1])),
        ("onnx_rnn_functions", "RNN", dict(hidden=4, inputs=3, steps=4, batch=2, directions=2, outputs=["Y", "Y_h"],
         lengths=[4, 1], direction="bidirectional", clip=1.5, activations=["Softplus", "Elu"], activation_alpha=[0.6])),
    ]
    cases = []
    for name, op, spec in specs:
        session, feeds = layer(name, op, **spec)
        got = session.run(None, feeds)
        case = {"model": name + ".onnx", "inputs": [], "outputs": []}
        for n, a in feeds.items():
            f = f"{name}.in.{n}.f32"
            a.astype("<f4").tofile(os.path.join(HERE, f))
            case["inputs"].append({"name": n, "shape": list(a.shape), "file": f})
        for o, r in zip(session.get_outputs(), got):
            f = f"{name}.out.{o.name}.f32"
            r.astype("<f4").tofile(os.path.join(HERE, f))
            case["outputs"].append({"name": o.name, "shape": list(r.shape), "file": f})
        cases.append(case)
    return cases


def main():
    torch.manual_seed(20261205)
    g = torch.Generator().manual_seed(48)
    os.makedirs(HERE, exist_ok=True)
    refusals()
    cases = layers()
    for name, cell, outs in [("torch_lstm", nn.LSTM, ["y", "h_n", "c_n"]), ("torch_gru", nn.GRU, ["y", "h_n"])]:
        net = Tagger(cell).eval()
        x = torch.randn(2, 7, 10, generator=g)
        with torch.no_grad():
            y = net(x)
        session = export(name, net, (x,), ["x"], outs, {"x": {1: "steps"}, "y": {1: "steps"}})
        cases.append(record(name, "", ["x"], [x], y, session)[0])

    name = "torch_lstm_stream"
    net = Stream().eval()
    x = torch.randn(6, 1, 8, generator=g)
    h = torch.randn(1, 1, 16, generator=g) * 0.5
    c = torch.randn(1, 1, 16, generator=g) * 0.5
    session = export(name, net, (x[:3], h, c), ["x", "h", "c"], ["p", "hn", "cn"], {"x": {0: "steps"}, "p": {0: "steps"}})
    for i, chunk in enumerate([x[:3], x[3:]]):
        with torch.no_grad():
            out = net(chunk, h, c)
        case, got = record(name, f".{i}", ["x", "h", "c"], [chunk, h, c], out, session)
        cases.append(case)
        h, c = torch.from_numpy(got[1]), torch.from_numpy(got[2])
    with open(os.path.join(HERE, "manifest.json"), "w") as f:
        json.dump({"torch": torch.__version__, "onnxruntime": ort.__version__, "opset": OPSET, "cases": cases}, f, indent=1)
    print(f"torch {torch.__version__}, onnxruntime {ort.__version__}: wrote {len(cases)} cases to {HERE}")


if __name__ == "__main__":
    main()
