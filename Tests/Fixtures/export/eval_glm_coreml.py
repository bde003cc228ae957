#!/usr/bin/env python3
"""Oracle for LinearExportTests: reads an exported Core ML linear model (a pipelineClassifier or pipelineRegressor)
with coremltools' spec and evaluates its stages in order with numpy, following Imputer.proto, TreeEnsemble.proto
(eval_tree_coreml.tree_scores), FeatureVectorizer.proto and GLMClassifier.proto / GLMRegressor.proto (Core ML itself
does not run on Linux).

Usage: eval_glm_coreml.py MODEL.mlmodel FEATURES.npy OUTPUT.npy
FEATURES is the (N, F) float32 input `features`. Each stage reads its inputs by name and writes its outputs:
- Imputer: elements equal to replaceDoubleValue (NaN: elements that are NaN) become imputedDoubleArray's;
- TreeEnsembleRegressor: the trees' sums (numPredictionDimensions columns);
- FeatureVectorizer: its inputs' columns side by side, in inputList order;
- GLMClassifier, Logit: scores s = weights · x + offset; ReferenceClass: the first class gets 1 / (1 + Σ e^s), class
  j + 1 gets e^(s_j) / (1 + Σ e^s) (two classes: one score, the second class's sigmoid); OneVsRest: each class's
  sigmoid, normalised to sum 1 (more than two classes);
- GLMRegressor, NoTransform: the score.
OUTPUT gets the class probabilities (N, C) or the predictions (N, 1). Prints a JSON summary: the model type, the
stages' types, specification version, input shape, output names, the classes (most probable label of each row) and
the metadata. Exit 3 when coremltools or numpy is missing, so the caller can skip loudly.
"""
import json
import sys

from eval_tree_coreml import np, read_spec, tree_scores


def imputer(m, x):
    imputed = np.array(m.imputedDoubleArray.vector, dtype=np.float64)
    if m.WhichOneof("ReplaceValue") != "replaceDoubleValue" or m.WhichOneof("ImputedValue") != "imputedDoubleArray":
        sys.exit("an imputer mltool does not write")
    replace = m.replaceDoubleValue
    hit = np.isnan(x) if np.isnan(replace) else x == replace
    return np.where(hit, imputed[None, :], x)


def glm_classifier(m, x):
    w = np.array([row.value for row in m.weights], dtype=np.float64)
    s = x @ w.T + np.array(m.offset, dtype=np.float64)
    labels = list(m.stringClassLabels.vector)
    if m.postEvaluationTransform != 0:
        sys.exit("only Logit is written by mltool")
    if len(labels) == 2:
        p = 1 / (1 + np.exp(-s[:, 0]))
        return labels, np.stack([1 - p, p], axis=1)
    if m.classEncoding == 0:  # ReferenceClass
        full = np.concatenate([np.zeros((s.shape[0], 1)), s], axis=1)
        e = np.exp(full - full.max(axis=1, keepdims=True))
        return labels, e / e.sum(axis=1, keepdims=True)
    p = 1 / (1 + np.exp(-s))
    return labels, p / p.sum(axis=1, keepdims=True)


def main():
    model_path, input_path, output_path = sys.argv[1:4]
    spec, kind = read_spec(model_path)
    stages = getattr(spec, kind).pipeline.models
    values = {spec.description.input[0].name: np.load(input_path).astype(np.float64)}
    summary = {
        "model_type": kind,
        "stages": [s.WhichOneof("Type") for s in stages],
        "specification_version": spec.specificationVersion,
        "input_shape": list(spec.description.input[0].type.multiArrayType.shape),
        "outputs": [o.name for o in spec.description.output],
        "metadata": dict(spec.description.metadata.userDefined),
    }
    for stage in stages:
        t = stage.WhichOneof("Type")
        m = getattr(stage, t)
        inputs = [values[i.name] for i in stage.description.input]
        out = stage.description.output[0].name
        if t == "imputer":
            values[out] = imputer(m, inputs[0])
        elif t == "treeEnsembleRegressor":
            values[out] = tree_scores(m.treeEnsemble, inputs[0])
        elif t == "featureVectorizer":
            values[out] = np.concatenate([values[c.inputColumn][:, : c.inputDimensions] for c in m.inputList], axis=1)
        elif t == "glmClassifier":
            labels, probabilities = glm_classifier(m, inputs[0])
            summary["labels"] = [labels[i] for i in probabilities.argmax(axis=1)]
            np.save(output_path, probabilities.astype(np.float32))
        elif t == "glmRegressor":
            w = np.array([row.value for row in m.weights], dtype=np.float64)
            if m.postEvaluationTransform != 0:
                sys.exit("only NoTransform is written by mltool")
            np.save(output_path, (inputs[0] @ w.T + np.array(m.offset)).astype(np.float32))
        else:
            sys.exit(f"stage {t} is not one mltool writes")
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
