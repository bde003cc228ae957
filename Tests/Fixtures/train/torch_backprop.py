#!/usr/bin/env python3
"""PyTorch autograd as the oracle of mltool's training kernels (BackpropTorchTests): reads one JSON request on stdin,
writes the gradients, optimizer states and learning rates that torch computes for it on stdout. Float32 throughout,
as the kernels. Layouts are mltool's: activations NHWC, convolution weights (KH, KW, C/groups, OC)."""
import json
import sys

import torch
import torch.nn.functional as F


def tensor(values, shape):
    return torch.tensor(values, dtype=torch.float32).reshape(shape)


def flat(t):
    return t.detach().reshape(-1).tolist()


def conv(case):
    g = case["geometry"]
    n, h, w, c = g["batch"], g["height"], g["width"], g["channels"]
    kh, kw, oc, groups = g["kernelHeight"], g["kernelWidth"], g["outChannels"], g["groups"]
    x = tensor(case["x"], (n, h, w, c)).permute(0, 3, 1, 2).contiguous().requires_grad_()
    wt = tensor(case["w"], (kh, kw, c // groups, oc)).permute(3, 2, 0, 1).contiguous().requires_grad_()
    b = tensor(case["b"], (oc,)).requires_grad_()
    padded = F.pad(x, (g["padLeft"], g["padRight"], g["padTop"], g["padBottom"]))
    y = F.conv2d(padded, wt, b, stride=(g["strideH"], g["strideW"]), dilation=(g["dilationH"], g["dilationW"]),
                 groups=groups)
    dy = tensor(case["dy"], (n, y.shape[2], y.shape[3], oc)).permute(0, 3, 1, 2)
    y.backward(dy)
    return {"y": flat(y.permute(0, 2, 3, 1)), "dx": flat(x.grad.permute(0, 2, 3, 1)),
            "dw": flat(wt.grad.permute(2, 3, 1, 0)), "db": flat(b.grad)}


def batch_norm(case):
    c = len(case["gamma"])
    x = tensor(case["x"], (-1, c)).requires_grad_()
    gamma, beta = tensor(case["gamma"], (c,)).requires_grad_(), tensor(case["beta"], (c,)).requires_grad_()
    mean, var = tensor(case["mean"], (c,)), tensor(case["variance"], (c,))
    y = F.batch_norm(x, mean, var, gamma, beta, training=case["training"], momentum=0.1, eps=1e-5)
    y.backward(tensor(case["dy"], (-1, c)))
    return {"y": flat(y), "dx": flat(x.grad), "dGamma": flat(gamma.grad), "dBeta": flat(beta.grad),
            "mean": flat(mean), "variance": flat(var)}


ACTIVATIONS = {"identity": lambda t: t, "relu": F.relu, "relu6": F.relu6, "sigmoid": torch.sigmoid,
               "silu": F.silu, "hardSwish": F.hardswish}


def activation(case):
    x = torch.tensor(case["x"], dtype=torch.float32, requires_grad=True)
    ACTIVATIONS[case["name"]](x).backward(torch.tensor(case["dy"], dtype=torch.float32))
    return {"dx": flat(x.grad)}


def optimizer(case):
    params = [torch.tensor(p, dtype=torch.float32, requires_grad=True) for p in case["parameters"]]
    if case["rule"] == "sgd":
        opt = torch.optim.SGD(params, lr=1, momentum=case["momentum"], weight_decay=case["weightDecay"])
    else:
        opt = torch.optim.AdamW(params, lr=1, betas=(case["beta1"], case["beta2"]), eps=case["epsilon"],
                                weight_decay=case["weightDecay"])
    for grads, rate in zip(case["gradients"], case["rates"]):
        for p, g in zip(params, grads):
            p.grad = torch.tensor(g, dtype=torch.float32)
        if case.get("clipNorm") is not None:
            torch.nn.utils.clip_grad_norm_(params, case["clipNorm"])
        for group in opt.param_groups:
            group["lr"] = rate
        opt.step()
    return {"parameters": [flat(p) for p in params]}


def schedule(case):
    p = torch.zeros(1, requires_grad=True)
    opt = torch.optim.SGD([p], lr=case["peak"])
    total = case["total"]
    if case["name"] == "oneCycle":
        sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=case["peak"], total_steps=total)
    else:
        sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=total)
    rates = []
    for _ in range(total):
        rates.append(opt.param_groups[0]["lr"])
        opt.step()
        sched.step()
    return {"rates": rates}


def graph(case):
    """A TrainableGraph (nodes in order, the last one the output) with softmax cross-entropy on its output."""
    params = [torch.tensor(p, dtype=torch.float32, requires_grad=True) for p in case["parameters"]]
    n, h, w, c = case["shape"]
    x = tensor(case["x"], (n, h, w, c)).permute(0, 3, 1, 2).contiguous().requires_grad_()
    outs = []
    for node in case["nodes"]:
        a = x if node["inputs"][0] < 0 else outs[node["inputs"][0]]
        if node["kind"] == "conv":
            cin, groups, oc = a.shape[1], node["groups"], node["outChannels"]
            kh, kw = node["kernel"]
            wt = params[node["weight"]].reshape(kh, kw, cin // groups, oc).permute(3, 2, 0, 1)
            top, left, bottom, right = node["pads"]
            z = F.conv2d(F.pad(a, (left, right, top, bottom)), wt, params[node["bias"]], stride=tuple(node["strides"]),
                         dilation=tuple(node["dilations"]), groups=groups)
        elif node["kind"] == "add":
            b = x if node["inputs"][1] < 0 else outs[node["inputs"][1]]
            z = a + b
        else:
            z = a.mean(dim=(2, 3), keepdim=True)
        outs.append(ACTIVATIONS[node.get("activation", "identity")](z))
    logits = outs[-1].reshape(n, -1)
    loss = F.cross_entropy(logits, torch.tensor(case["labels"]))
    loss.backward()
    return {"loss": [loss.item()], "logits": flat(logits), "input": flat(x.grad.permute(0, 2, 3, 1)),
            "parameters": [flat(p.grad) for p in params]}


def main():
    request = json.load(sys.stdin)
    kinds = {"conv": conv, "batchNorm": batch_norm, "activation": activation, "optimizer": optimizer,
             "schedule": schedule, "graph": graph}
    json.dump({kind: [kinds[kind](case) for case in request.get(kind, [])] for kind in kinds}, sys.stdout)


if __name__ == "__main__":
    main()
