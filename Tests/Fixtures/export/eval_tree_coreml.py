#!/usr/bin/env python3
"""Oracle for TreeEnsembleExportTests: reads an exported Core ML tree ensemble with coremltools' spec and evaluates
its trees with numpy, following TreeEnsemble.proto (Core ML itself does not run on Linux).

Usage: eval_tree_coreml.py MODEL.mlmodel FEATURES.npy OUTPUT.npy
FEATURES is the (N, F) float32 input `features`. Per tree, from node 0: a missing (NaN) value takes the true child
when missingValueTracksTrueChild is set, else the false one; BranchOnValueLessThanEqual is true when value ≤
branchFeatureValue, BranchOnValueEqual when value = branchFeatureValue; a LeafNode adds each evaluationValue to score
evaluationIndex. Scores start at basePredictionValue (float64). Post-evaluation: Regression_Logistic gives
p = 1 / (1 + e^-s) of the second class (the first gets 1 - p), Classification_SoftMax the softmax, NoTransform (averaged
trees) the scores themselves. OUTPUT gets the
class probabilities (N, C) or the regression's predictions (N, 1). Prints a JSON summary: the model type,
specification version, input and output names, the classes (the most probable label of each row) and the metadata.
Exit 3 when coremltools or numpy is missing, so the caller can skip loudly.
"""
import json
import sys

try:
    import numpy as np
    from coremltools.proto import Model_pb2
except ImportError as e:  # pragma: no cover
    print(f"missing: {e}", file=sys.stderr)
    sys.exit(3)

LEQ, EQ, LEAF = 0, 4, 6


def tree_scores(params, x):
    """The (N, numPredictionDimensions) float64 scores of TreeEnsembleParameters `params` on the (N, F) float64 `x`."""
    n = x.shape[0]
    scores = np.tile(np.array(params.basePredictionValue, dtype=np.float64), (n, 1))
    trees = {}
    for node in params.nodes:
        trees.setdefault(node.treeId, {})[node.nodeId] = node
    for tree in trees.values():
        at = np.zeros(n, dtype=np.int64)
        for nid in sorted(tree):  # children are numbered after their parents
            node = tree[nid]
            rows = at == nid
            if not rows.any():
                continue
            if node.nodeBehavior == LEAF:
                for info in node.evaluationInfo:
                    scores[rows, info.evaluationIndex] += info.evaluationValue
                at[rows] = -1
                continue
            v = x[rows, node.branchFeatureIndex]
            if node.nodeBehavior == LEQ:
                yes = v <= node.branchFeatureValue
            elif node.nodeBehavior == EQ:
                yes = v == node.branchFeatureValue
            else:
                sys.exit(f"node behavior {node.nodeBehavior} is not one mltool writes")
            yes = np.where(np.isnan(v), node.missingValueTracksTrueChild, yes)
            at[rows] = np.where(yes, node.trueChildNodeId, node.falseChildNodeId)
        assert (at == -1).all(), "a row ended at a node that is not a leaf"
    return scores


def read_spec(path):
    """The parsed Model of a .mlmodel file and the name of its type."""
    spec = Model_pb2.Model()
    with open(path, "rb") as f:
        spec.ParseFromString(f.read())
    return spec, spec.WhichOneof("Type")


def main():
    model_path, input_path, output_path = sys.argv[1:4]
    spec, kind = read_spec(model_path)
    m = getattr(spec, kind)
    scores = tree_scores(m.treeEnsemble, np.load(input_path).astype(np.float64))
    summary = {
        "model_type": kind,
        "specification_version": spec.specificationVersion,
        "inputs": [i.name for i in spec.description.input],
        "input_shape": list(spec.description.input[0].type.multiArrayType.shape),
        "outputs": [o.name for o in spec.description.output],
        "metadata": dict(spec.description.metadata.userDefined),
    }
    if kind == "treeEnsembleClassifier":
        labels = list(m.stringClassLabels.vector)
        if m.postEvaluationTransform == 2:  # Regression_Logistic
            p = 1 / (1 + np.exp(-scores[:, 0]))
            probabilities = np.stack([1 - p, p], axis=1)
        elif m.postEvaluationTransform == 1:  # Classification_SoftMax
            e = np.exp(scores - scores.max(axis=1, keepdims=True))
            probabilities = e / e.sum(axis=1, keepdims=True)
        elif m.postEvaluationTransform == 0 and scores.shape[1] == len(labels):  # NoTransform: the sums are the probabilities
            probabilities = scores
        else:
            sys.exit(f"post-evaluation transform {m.postEvaluationTransform} is not one mltool writes")
        summary["labels"] = [labels[i] for i in probabilities.argmax(axis=1)]
        np.save(output_path, probabilities.astype(np.float32))
    else:
        np.save(output_path, scores.astype(np.float32))
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
