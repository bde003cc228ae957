"""Writes Core ML models with recurrent layers and ops, and torch's outputs on real inputs as their reference (run
once, by hand, from the repository root; the tests need neither torch nor coremltools):

    python3 Tests/Fixtures/coreml/make_recurrent_fixtures.py

Made with the system-wide torch 2.15.0 and coremltools 9.0 (float32 compute precision, so torch's float32 outputs
are the reference at 1e-4 of the output's range). Every input is real: rows of scikit-image's `camera` photo, each
averaged to 16 columns and scaled to 0…1 (the rows make the sequence), rnn.in.f32 (B, T, 16) batch-major.

ML Program, converted by coremltools from seeded torch modules (batch_first, batch 2, T = 10, one output "y"):
- mil_lstm.mlpackage: nn.LSTM(16, 12) → MIL `lstm` (ifoz weights, summed biases), y (2, T, 12).
- mil_lstm2_bi.mlpackage: nn.LSTM(16, 8, num_layers=2, bidirectional=True) → two bidirectional `lstm` ops, y (2, T, 16).
- mil_rnn.mlpackage: nn.RNN(16, 12) (tanh) → MIL `rnn`, y (2, T, 12).
- mil_gru.mlpackage: MIL `gru` written with coremltools' builder (direction "reverse", output_sequence, its r, o, z
  weight order), the weights a seeded torch nn.GRU's; the reference is MIL's gru equations (reset applied before
  the recursion matrix, one bias per gate: torch's b_ih + b_hh, which differs from nn.GRU itself) computed with
  torch ops, outputs in processing order; y (T, 2, 12) time-major.
- mil_lstm_flexible.mlpackage: a bidirectional nn.LSTM(16, 12) on (1, L, 16), L a RangeDim 2…32 (default 10):
  mil_lstm_flexible.L<n>.y.f32 holds torch's (1, n, 24) output at L = 10 and 4.
- mil_lstm_state.mlpackage / nn_gru_state.mlmodel: initial states as model inputs (<name>.<state>.in.f32), see
  state_fixtures.
- mil_torch_gru.mlpackage: nn.GRU(16, 12) as coremltools converts it: not a `gru` op but a while_loop (the tests
  assert the refusal names it).

NeuralNetwork (NeuralNetworkBuilder, exact rank mapping: blobs [T, 1, C, 1, 1]), weights from seeded torch modules:
- nn_lstm.mlmodel: uniDirectionalLSTM, reverseInput, sequenceOutput, forgetBias off; y (T, 1, 12, 1, 1) = nn.LSTM on
  the reversed sequence (Core ML gives the outputs in processing order); the final states h and c are outputs too.
- nn_bilstm.mlmodel: biDirectionalLSTM, sequenceOutput: y (T, 1, 16, 1, 1) = bidirectional nn.LSTM(16, 8).
- nn_gru.mlmodel: gru, final state only: y (1, 1, 12, 1, 1) from Core ML's GRU equations (as mil_gru) in torch ops.
- nn_rnn.mlmodel: simpleRecurrent (tanh), sequenceOutput: y (T, 1, 12, 1, 1) = nn.RNN(16, 12).
- nn_lstm_peephole.mlmodel: two stacked uniDirectionalLSTM layers using what torch lacks — peepholes and
  forgetBias, then hard-sigmoid gates with coupledInputAndForgetGate —; the reference is Core ML's LSTM equations
  (NeuralNetwork.proto) in torch ops, y (T, 1, 8, 1, 1).
- nn_lstm_state.mlmodel: a uniDirectionalLSTM whose initial states are model inputs (refused: its cell clip cannot
  be shown inert).
(nn_* use the first sequence of the batch.)

manifest_recurrent.json lists each case (model, input shape, time_major for mil_gru), its output files (<name>.<output>.f32) and shapes.
"""
import json
import os

import numpy as np
import torch
from torch import nn

import coremltools as ct
from coremltools.converters.mil import Builder as mb
from coremltools.models import datatypes
from coremltools.models.neural_network import NeuralNetworkBuilder
from skimage import data

HERE = os.path.dirname(os.path.abspath(__file__))
I, T, B = 16, 10, 2


def camera_sequences():
    img = data.camera().astype(np.float32) / 255.0                      # 512×512 grayscale
    cols = img.reshape(512, I, 512 // I).mean(axis=2)                    # 512×16
    return np.stack([cols[100:100 + T], cols[300:300 + T]])             # (B, T, 16)


def write(path, a):
    np.ascontiguousarray(a).astype("<f4").tofile(os.path.join(HERE, path))


def seeded(module, seed):
    torch.manual_seed(seed)
    m = module().eval()
    with torch.no_grad():
        for p in m.parameters():
            p.copy_(torch.randn_like(p) * 0.4)
    return m


class Wrapped(nn.Module):
    def __init__(self, rnn):
        super().__init__()
        self.rnn = rnn

    def forward(self, x):
        return self.rnn(x)[0]


def convert_torch(name, module, x):
    traced = torch.jit.trace(Wrapped(module).eval(), torch.from_numpy(x))
    model = ct.convert(traced, inputs=[ct.TensorType(name="x", shape=x.shape, dtype=np.float32)],
                       outputs=[ct.TensorType(name="y")], convert_to="mlprogram",
                       compute_precision=ct.precision.FLOAT32, minimum_deployment_target=ct.target.iOS16)
    model.save(os.path.join(HERE, name + ".mlpackage"))


def flexible_fixture(x, manifest):
    """nn.LSTM(16, 12, bidirectional) on (1, L, 16) with L a RangeDim 2…32 (default 10): one import runs at every
    length; references at L = 10 and 4 (the first sequence's first rows)."""
    with torch.no_grad():
        m = seeded(lambda: nn.LSTM(I, 12, bidirectional=True, batch_first=True), 15)
        traced = torch.jit.trace(Wrapped(m).eval(), torch.from_numpy(x[:1]))
        length = ct.RangeDim(lower_bound=2, upper_bound=32, default=T, symbol="length")
        ct.convert(traced, inputs=[ct.TensorType(name="x", shape=(1, length, I), dtype=np.float32)], outputs=[ct.TensorType(name="y")],
                   convert_to="mlprogram", compute_precision=ct.precision.FLOAT32,
                   minimum_deployment_target=ct.target.iOS16).save(os.path.join(HERE, "mil_lstm_flexible.mlpackage"))
        for n in [T, 4]:
            write("mil_lstm_flexible.L%d.y.f32" % n, m(torch.from_numpy(x[:1, :n]))[0].numpy())
        manifest["flexible"] = {"model": "mil_lstm_flexible.mlpackage", "lengths": [T, 4], "range": [2, 32], "outputs": 24}


class WithStates(nn.Module):
    def __init__(self, rnn):
        super().__init__()
        self.rnn = rnn

    def forward(self, x, h0, c0):
        y, (h, c) = self.rnn(x, (h0, c0))
        return y, h, c


def state_fixtures(x, manifest):
    """Initial states given as inputs: a bidirectional nn.LSTM(16, 6) (batch_first, batch 2) called with h0 and c0
    (2, 2, 6) — coremltools turns them into MIL's (b, 2·H), forward half first —, its outputs y, h and c (torch's
    (2, B, H) final states); and a NeuralNetwork gru whose h0 [1, 1, 12, 1, 1] is an input, with y and h out. The
    states are camera rows too (rows 200, 202 and 210, scaled to −1…1)."""
    img = data.camera().astype(np.float32) / 255.0
    h0 = (img[200, :24].reshape(2, 2, 6) * 2 - 1).astype(np.float32)
    c0 = (img[202, :24].reshape(2, 2, 6) * 2 - 1).astype(np.float32)
    with torch.no_grad():
        m = seeded(lambda: nn.LSTM(I, 6, bidirectional=True, batch_first=True), 16)
        args = tuple(torch.from_numpy(a) for a in (x, h0, c0))
        traced = torch.jit.trace(WithStates(m).eval(), args)
        ct.convert(traced, inputs=[ct.TensorType(name=n, shape=a.shape, dtype=np.float32) for n, a in zip(["x", "h0", "c0"], (x, h0, c0))],
                   outputs=[ct.TensorType(name=n) for n in ["y", "h", "c"]], convert_to="mlprogram",
                   compute_precision=ct.precision.FLOAT32,
                   minimum_deployment_target=ct.target.iOS16).save(os.path.join(HERE, "mil_lstm_state.mlpackage"))
        y, h, c = WithStates(m)(*args)
        outputs = {"y": y.numpy(), "h": h.numpy(), "c": c.numpy()}
        for k, v in outputs.items():
            write("mil_lstm_state.%s.f32" % k, v)
        write("mil_lstm_state.h0.in.f32", h0)
        write("mil_lstm_state.c0.in.f32", c0)
        manifest["cases"]["mil_lstm_state"] = {"model": "mil_lstm_state.mlpackage", "input": "x", "shape": list(x.shape),
                                               "states": {"h0": list(h0.shape), "c0": list(c0.shape)},
                                               "outputs": {k: list(v.shape) for k, v in outputs.items()}}

        g = seeded(lambda: nn.GRU(I, 12), 27)
        bias = g.bias_ih_l0 + g.bias_hh_l0
        start = torch.from_numpy((img[210, :12] * 2 - 1).astype(np.float32))
        y = coreml_gru(torch.from_numpy(x[0])[:, None], start[None], g.weight_ih_l0, g.weight_hh_l0, bias)
        r_z = lambda w: [w.chunk(3)[1].numpy(), w.chunk(3)[0].numpy(), w.chunk(3)[2].numpy()]   # z, r, o
        inputs = [("x", datatypes.Array(T, 1, I, 1, 1)), ("h0", datatypes.Array(1, 1, 12, 1, 1))]
        b = NeuralNetworkBuilder(inputs, [("y", datatypes.Array(T, 1, 12, 1, 1)), ("h", datatypes.Array(1, 1, 12, 1, 1))],
                                 disable_rank5_shape_mapping=True)
        b.add_gru("gru", W_h=r_z(g.weight_hh_l0), W_x=r_z(g.weight_ih_l0), b=r_z(bias), hidden_size=12, input_size=I,
                  input_names=["x", "h0"], output_names=["y", "h"], activation="TANH", inner_activation="SIGMOID", output_all=True)
        write("nn_gru_state.h0.in.f32", start.numpy())
        save_nn("nn_gru_state", b, {"y": y.reshape(T, 1, 12, 1, 1).numpy(), "h": y[-1].reshape(1, 1, 12, 1, 1).numpy()}, manifest)
        manifest["cases"]["nn_gru_state"]["states"] = {"h0": [1, 1, 12, 1, 1]}


def coreml_gru(x, h, w_ih, w_hh, b):
    """Core ML's GRU (NeuralNetwork.proto GRULayerParams, MIL gru) for x (T, B, I), weights in torch's r, z, n order:
    r and z as torch's; o = tanh(W_o x + R_o (r ⊙ h) + b_o); h = (1 − z) ⊙ o + z ⊙ h."""
    w_r, w_z, w_o = w_ih.chunk(3)
    r_r, r_z, r_o = w_hh.chunk(3)
    b_r, b_z, b_o = b.chunk(3)
    out = []
    for t in range(x.shape[0]):
        r = torch.sigmoid(x[t] @ w_r.T + h @ r_r.T + b_r)
        z = torch.sigmoid(x[t] @ w_z.T + h @ r_z.T + b_z)
        o = torch.tanh(x[t] @ w_o.T + (r * h) @ r_o.T + b_o)
        h = (1 - z) * o + z * h
        out.append(h)
    return torch.stack(out)


def mil_fixtures(x, manifest):
    with torch.no_grad():
        for name, module, seed in [("mil_lstm", lambda: nn.LSTM(I, 12, batch_first=True), 11),
                                   ("mil_lstm2_bi", lambda: nn.LSTM(I, 8, num_layers=2, bidirectional=True, batch_first=True), 12),
                                   ("mil_rnn", lambda: nn.RNN(I, 12, batch_first=True), 13)]:
            m = seeded(module, seed)
            convert_torch(name, m, x)
            y = m(torch.from_numpy(x))[0].numpy()
            write(name + ".y.f32", y)
            manifest["cases"][name] = {"model": name + ".mlpackage", "input": "x", "shape": list(x.shape),
                              "outputs": {"y": list(y.shape)}}
        g = seeded(lambda: nn.GRU(I, 12, batch_first=True), 14)
        try:
            convert_torch("mil_torch_gru", g, x)
            manifest["refused"] = {"model": "mil_torch_gru.mlpackage", "op": "while_loop"}
        except Exception as e:   # noqa: BLE001 (recorded: the test then has nothing to check)
            print("nn.GRU does not convert:", e)
        # MIL gru: torch's r, z, n blocks → MIL's r, o, z; the reverse direction runs on the flipped sequence.
        w_ih, w_hh, b = g.weight_ih_l0, g.weight_hh_l0, g.bias_ih_l0 + g.bias_hh_l0
        order = lambda v: torch.cat([v.chunk(3)[0], v.chunk(3)[2], v.chunk(3)[1]]).numpy()
        xt = np.ascontiguousarray(x.transpose(1, 0, 2))                  # (T, B, I)

        @mb.program(input_specs=[mb.TensorSpec(shape=xt.shape)], opset_version=ct.target.iOS16)
        def prog(x):
            y, _ = mb.gru(x=x, initial_h=np.zeros((B, 12), np.float32), weight_ih=order(w_ih), weight_hh=order(w_hh),
                          bias=order(b), direction="reverse", output_sequence=True, name="gru")
            return mb.identity(x=y, name="y")

        ct.convert(prog, convert_to="mlprogram", compute_precision=ct.precision.FLOAT32,
                   minimum_deployment_target=ct.target.iOS16).save(os.path.join(HERE, "mil_gru.mlpackage"))
        y = coreml_gru(torch.from_numpy(xt).flip(0), torch.zeros(B, 12), w_ih, w_hh, b).numpy()
        write("mil_gru.y.f32", y)
        manifest["cases"]["mil_gru"] = {"model": "mil_gru.mlpackage", "input": "x", "shape": list(xt.shape), "time_major": True,
                               "outputs": {"y": list(y.shape)}}


def nn_builder(h_out, extra_outputs=()):
    inputs = [("x", datatypes.Array(T, 1, I, 1, 1))]
    outputs = [("y", datatypes.Array(*h_out))] + [(n, datatypes.Array(1, 1, s, 1, 1)) for n, s in extra_outputs]
    return NeuralNetworkBuilder(inputs, outputs, disable_rank5_shape_mapping=True)


def ifzo(w):
    """torch's i, f, g, o blocks → the builder's list [i, f, o, z]."""
    i, f, g, o = [v.numpy() for v in w.chunk(4)]
    return [i, f, o, g]


def save_nn(name, builder, outputs, manifest):
    spec = builder.spec
    ct.models.MLModel(spec).save(os.path.join(HERE, name + ".mlmodel"))
    for k, v in outputs.items():
        write("%s.%s.f32" % (name, k), v)
    manifest["cases"][name] = {"model": name + ".mlmodel", "input": "x", "shape": [T, 1, I, 1, 1],
                      "outputs": {k: list(v.shape) for k, v in outputs.items()}}


def coreml_lstm(x, w_ih, w_hh, b, p, gate, forget_bias=False, coupled=False):
    """Core ML's LSTM (NeuralNetwork.proto LSTMParams) for x (T, I), weights in the builder's i, f, o, z order,
    peepholes i, f, o, gate function `gate`, tanh for the block input and the output; the cell clip never binds."""
    w_i, w_f, w_o, w_z = w_ih
    r_i, r_f, r_o, r_z = w_hh
    b_i, b_f, b_o, b_z = b
    p_i, p_f, p_o = p
    h = torch.zeros(w_hh[0].shape[0])
    c = torch.zeros_like(h)
    out = []
    for t in range(x.shape[0]):
        i = gate(w_i @ x[t] + r_i @ h + p_i * c + b_i)
        f = gate(w_f @ x[t] + r_f @ h + p_f * c + b_f + (1 if forget_bias else 0))
        z = torch.tanh(w_z @ x[t] + r_z @ h + b_z)
        c = c * (1 - i) + i * z if coupled else c * f + i * z
        o = gate(w_o @ x[t] + r_o @ h + p_o * c + b_o)
        h = torch.tanh(c) * o
        out.append(h)
    return torch.stack(out)


def nn_peephole_fixture(seq, manifest):
    """Two stacked uniDirectionalLSTM layers with Core ML's own options, the reference their proto equations in
    torch ops: peepholes and forgetBias (12 units), then hard-sigmoid gates with coupledInputAndForgetGate (8)."""
    torch.manual_seed(25)
    rand = lambda *s: torch.randn(*s) * 0.4
    one = [[rand(12, I) for _ in range(4)], [rand(12, 12) for _ in range(4)], [rand(12) for _ in range(4)], [rand(12) for _ in range(3)]]
    two = [[rand(8, 12) for _ in range(4)], [rand(8, 8) for _ in range(4)], [rand(8) for _ in range(4)], [rand(8) for _ in range(3)]]
    hard = lambda v: torch.clamp(0.2 * v + 0.5, 0, 1)
    y1 = coreml_lstm(seq, *one, gate=torch.sigmoid, forget_bias=True)
    y = coreml_lstm(y1, *two, gate=hard, coupled=True)
    b = nn_builder((T, 1, 8, 1, 1))
    np_ = lambda vs: [v.numpy() for v in vs]
    b.add_unilstm("peephole", W_h=np_(one[1]), W_x=np_(one[0]), b=np_(one[2]), peep=np_(one[3]), hidden_size=12, input_size=I,
                  input_names=["x"], output_names=["y1"], output_all=True, forget_bias=True)
    b.add_unilstm("coupled", W_h=np_(two[1]), W_x=np_(two[0]), b=np_(two[2]), peep=np_(two[3]), hidden_size=8, input_size=12,
                  input_names=["y1"], output_names=["y"], output_all=True, coupled_input_forget_gate=True,
                  inner_activation="SIGMOID_HARD")
    save_nn("nn_lstm_peephole", b, {"y": y.reshape(T, 1, 8, 1, 1).numpy()}, manifest)


def nn_state_fixture(manifest):
    """A uniDirectionalLSTM whose initial states are model inputs: its cellClipThreshold (the builder's 50000)
    cannot be shown inert, so the import is refused naming it."""
    torch.manual_seed(26)
    inputs = [("x", datatypes.Array(T, 1, I, 1, 1)), ("h0", datatypes.Array(1, 1, 4, 1, 1)), ("c0", datatypes.Array(1, 1, 4, 1, 1))]
    b = NeuralNetworkBuilder(inputs, [("y", datatypes.Array(T, 1, 4, 1, 1))], disable_rank5_shape_mapping=True)
    w = lambda *s: [np.random.RandomState(26).randn(*s).astype(np.float32) for _ in range(4)]
    b.add_unilstm("stateful", W_h=w(4, 4), W_x=w(4, I), b=None, hidden_size=4, input_size=I, input_names=["x", "h0", "c0"],
                  output_names=["y"], output_all=True)
    ct.models.MLModel(b.spec).save(os.path.join(HERE, "nn_lstm_state.mlmodel"))
    manifest["refused_layer"] = {"model": "nn_lstm_state.mlmodel", "layer": "stateful", "field": "cellClipThreshold"}


def nn_fixtures(x, manifest):
    seq = torch.from_numpy(x[0])                                         # (T, 16): the first sequence
    with torch.no_grad():
        m = seeded(lambda: nn.LSTM(I, 12), 21)
        y, (h, c) = m(seq.flip(0)[:, None])
        b = nn_builder((T, 1, 12, 1, 1), [("h", 12), ("c", 12)])
        b.add_unilstm("lstm", W_h=ifzo(m.weight_hh_l0), W_x=ifzo(m.weight_ih_l0), b=ifzo(m.bias_ih_l0 + m.bias_hh_l0),
                      hidden_size=12, input_size=I, input_names=["x"], output_names=["y", "h", "c"],
                      output_all=True, reverse_input=True)
        save_nn("nn_lstm", b, {"y": y.reshape(T, 1, 12, 1, 1).numpy(), "h": h.reshape(1, 1, 12, 1, 1).numpy(),
                               "c": c.reshape(1, 1, 12, 1, 1).numpy()}, manifest)

        m = seeded(lambda: nn.LSTM(I, 8, bidirectional=True), 22)
        y = m(seq[:, None])[0]
        b = nn_builder((T, 1, 16, 1, 1))
        b.add_bidirlstm("bilstm", W_h=ifzo(m.weight_hh_l0), W_x=ifzo(m.weight_ih_l0), b=ifzo(m.bias_ih_l0 + m.bias_hh_l0),
                        W_h_back=ifzo(m.weight_hh_l0_reverse), W_x_back=ifzo(m.weight_ih_l0_reverse),
                        b_back=ifzo(m.bias_ih_l0_reverse + m.bias_hh_l0_reverse), hidden_size=8, input_size=I,
                        input_names=["x"], output_names=["y"], output_all=True)
        save_nn("nn_bilstm", b, {"y": y.reshape(T, 1, 16, 1, 1).numpy()}, manifest)

        g = seeded(lambda: nn.GRU(I, 12), 23)
        bias = g.bias_ih_l0 + g.bias_hh_l0
        y = coreml_gru(seq[:, None], torch.zeros(1, 12), g.weight_ih_l0, g.weight_hh_l0, bias)[-1:]
        r_z = lambda w: [w.chunk(3)[1].numpy(), w.chunk(3)[0].numpy(), w.chunk(3)[2].numpy()]   # z, r, o
        b = nn_builder((1, 1, 12, 1, 1))
        b.add_gru("gru", W_h=r_z(g.weight_hh_l0), W_x=r_z(g.weight_ih_l0), b=r_z(bias), hidden_size=12, input_size=I,
                  input_names=["x"], output_names=["y"], activation="TANH", inner_activation="SIGMOID", output_all=False)
        save_nn("nn_gru", b, {"y": y.reshape(1, 1, 12, 1, 1).numpy()}, manifest)

        m = seeded(lambda: nn.RNN(I, 12), 24)
        y = m(seq[:, None])[0]
        b = nn_builder((T, 1, 12, 1, 1))
        b.add_simple_rnn("rnn", W_h=m.weight_hh_l0.numpy(), W_x=m.weight_ih_l0.numpy(), b=(m.bias_ih_l0 + m.bias_hh_l0).numpy(),
                         hidden_size=12, input_size=I, activation="TANH", input_names=["x"], output_names=["y"], output_all=True)
        save_nn("nn_rnn", b, {"y": y.reshape(T, 1, 12, 1, 1).numpy()}, manifest)

        nn_peephole_fixture(seq, manifest)
    nn_state_fixture(manifest)


def main():
    x = camera_sequences()
    write("rnn.in.f32", x)
    manifest = {"torch": torch.__version__, "coremltools": ct.__version__, "input": "rnn.in.f32", "cases": {}}
    mil_fixtures(x, manifest)
    flexible_fixture(x, manifest)
    state_fixtures(x, manifest)
    nn_fixtures(x, manifest)
    with open(os.path.join(HERE, "manifest_recurrent.json"), "w") as f:
        json.dump(manifest, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
