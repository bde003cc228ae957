#!/usr/bin/env python3
"""Fetches the TFLite models the mediapipe wheel bundles (Apache-2.0) into .build/tflite/models, and writes LiteRT's
outputs on real photos beside them (.build/tflite/manifest.json) for Tests/MLToolImportTests/TFLiteImportTests.swift.

The wheel is pinned by version and sha256 (`pip download --no-deps`, kept in .build/tflite/wheels); each extracted
.tflite is checked against its sha256 below. Inputs are scikit-image's astronaut, chelsea and coffee photos resized
(bilinear, PIL) to the model's input size and scaled as MediaPipe's graphs feed them ([-1, 1] or [0, 1]); the
references are LiteRT's (`ai_edge_litert`) float outputs. Idempotent; nothing it writes is committed."""
import argparse, json, os, sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import pinned  # noqa: E402

TOOL = "fetch_mediapipe.py"
WHEEL = "mediapipe-0.10.21-cp311-cp311-manylinux_2_28_x86_64.whl"
WHEEL_SHA256 = "05dc4a9e593655a79558d05d6227d31018c2537a4bd3362b51e230cf22aecfe3"
VERSION = "0.10.21"

# name: (member in the wheel, sha256, input scaling: "signed" [-1, 1] or "unit" [0, 1])
MODELS = {
    "face_detection_short_range": ("mediapipe/modules/face_detection/face_detection_short_range.tflite",
                                   "bbff11cebd1eb27a1e004cae0b0e63ec8c551cbf34a4451148b4908b8db3eca8", "signed"),
    "face_detection_full_range_sparse": ("mediapipe/modules/face_detection/face_detection_full_range_sparse.tflite",
                                         "2c3728e6da56f21e21a320433396fb06d40d9088f2247c05e5635a688d45dfe1", "signed"),
    "face_landmark": ("mediapipe/modules/face_landmark/face_landmark.tflite",
                      "1055cb9d4a9ca8b8c688902a3a5194311138ba256bcc94e336d8373a5f30c814", "unit"),
    "face_landmark_with_attention": ("mediapipe/modules/face_landmark/face_landmark_with_attention.tflite",
                                     "e06a804e0144f9929eda782122916b35d60c697c3c9344013ca2bbe76a6ce2b4", "unit"),
    "iris_landmark": ("mediapipe/modules/iris_landmark/iris_landmark.tflite",
                      "d1744d2a09c25f501d39eba4faff47e53ecca8852c5ce19bce8eeac39357521f", "unit"),
    "hand_landmark_lite": ("mediapipe/modules/hand_landmark/hand_landmark_lite.tflite",
                           "048edd3645c9bf7397d19a9f6e3a42957d6e414c9bea6598030a2e9b624156e6", "unit"),
    "hand_landmark_full": ("mediapipe/modules/hand_landmark/hand_landmark_full.tflite",
                           "11c272b891e1a99ab034208e23937a8008388cf11ed2a9d776ed3d01d0ba00e3", "unit"),
    "palm_detection_lite": ("mediapipe/modules/palm_detection/palm_detection_lite.tflite",
                            "e9a4aaddf90dda56a87235303cf00e4c2d3fb28725f68fd88772997dac905c18", "unit"),
    "palm_detection_full": ("mediapipe/modules/palm_detection/palm_detection_full.tflite",
                            "1b14e9422c6ad006cde6581a46c8b90dd573c07ab7f3934b5589e7cea3f89a54", "unit"),
    "pose_detection": ("mediapipe/modules/pose_detection/pose_detection.tflite",
                       "9ba9dd3d42efaaba86b4ff0122b06f29c4122e756b329d89dca1e297fd8f866c", "signed"),
    "pose_landmark_full": ("mediapipe/modules/pose_landmark/pose_landmark_full.tflite",
                           "e9a5c5cb17f736fafd4c2ec1da3b3d331d6edbe8a0d32395855aeb2cdfd64b9f", "unit"),
    "selfie_segmentation": ("mediapipe/modules/selfie_segmentation/selfie_segmentation.tflite",
                            "9ee168ec7c8f2a16c56fe8e1cfbc514974cbbb7e434051b455635f1bd1462f5c", "unit"),
    "selfie_segmentation_landscape": ("mediapipe/modules/selfie_segmentation/selfie_segmentation_landscape.tflite",
                                      "a77d03f4659b9f6b6c1f5106947bf40e99d7655094b6527f214ea7d451106edd", "unit"),
    "hand_recrop": ("mediapipe/modules/holistic_landmark/hand_recrop.tflite",
                    "67d996ce96f9d36fe17d2693022c6da93168026ab2f028f9e2365398d8ac7d5d", "signed"),
}
PHOTOS = ["astronaut", "chelsea", "coffee"]


def fetch(out):
    models = os.path.join(out, "models")
    os.makedirs(models, exist_ok=True)
    path = pinned.wheel(TOOL, f"mediapipe=={VERSION}", WHEEL, WHEEL_SHA256, os.path.join(out, "wheels"),
                        pip_args=("--python-version", "3.11", "--platform", "manylinux_2_28_x86_64"))
    pinned.extract(TOOL, path, {os.path.join(models, name + ".tflite"): (member, digest)
                                for name, (member, digest, _) in MODELS.items()})
    return models


def references(out, models):
    import numpy as np
    from PIL import Image
    from skimage import data
    from ai_edge_litert.interpreter import Interpreter
    import ai_edge_litert
    refs = os.path.join(out, "references")
    os.makedirs(refs, exist_ok=True)
    runs = []
    for name, (_, _, scaling) in MODELS.items():
        try:
            interpreter = Interpreter(model_path=os.path.join(models, name + ".tflite"))
            interpreter.allocate_tensors()
        except Exception as e:   # custom ops LiteRT does not have (face_landmark_with_attention)
            print(f"fetch_mediapipe.py: {name}: LiteRT cannot run it: {str(e).splitlines()[0]}", file=sys.stderr)
            continue
        (inp,) = interpreter.get_input_details()
        _, h, w, _ = inp["shape"]
        for photo in PHOTOS:
            image = Image.fromarray(getattr(data, photo)()).convert("RGB").resize((int(w), int(h)), Image.BILINEAR)
            x = np.asarray(image, dtype=np.float32)[None] / 255.0
            if scaling == "signed":
                x = x * 2 - 1
            interpreter.set_tensor(inp["index"], x)
            interpreter.invoke()
            tag = f"{name}.{photo}"
            np.save(os.path.join(refs, tag + ".input.npy"), x)
            outputs = []
            for k, o in enumerate(interpreter.get_output_details()):
                y = interpreter.get_tensor(o["index"]).astype(np.float32)
                np.save(os.path.join(refs, f"{tag}.output{k}.npy"), y)
                outputs.append({"name": o["name"], "shape": list(map(int, y.shape)), "file": f"references/{tag}.output{k}.npy"})
            runs.append({"model": name, "photo": photo, "input": {"name": inp["name"], "shape": list(map(int, x.shape)),
                                                                    "file": f"references/{tag}.input.npy"},
                         "outputs": outputs})
    manifest = {"mediapipe": VERSION, "litert": ai_edge_litert.__version__ if hasattr(ai_edge_litert, "__version__") else "?",
                "models": {n: f"models/{n}.tflite" for n in MODELS}, "runs": runs}
    with open(os.path.join(out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", default=".build/tflite", help="directory (default .build/tflite)")
    ap.add_argument("--no-references", action="store_true", help="only fetch and check the models")
    args = ap.parse_args()
    models = fetch(args.out)
    if not args.no_references:
        references(args.out, models)


if __name__ == "__main__":
    main()
