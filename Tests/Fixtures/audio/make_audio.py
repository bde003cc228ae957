#!/usr/bin/env python3
"""Writes the audio fixtures of Tests/MLToolAudioTests into .build/audio (or --out): real recordings in every
encoding mltool decodes, with what an independent reader gives, and scipy's resample_poly of them.

Sources (real data only): FSDD's 0_jackson_0.wav (8 kHz, 16-bit, ../shared/datasets/fsdd, or $FSDD_DIR) and
sound-theme-freedesktop's bell.oga (44.1 kHz stereo Ogg Vorbis, the apt package the Makefile installs).
- speech-{u8,16,24,32,float,double}.wav and speech.flac, speech-stereo.wav: the FSDD clip written by soundfile in
  each subtype (stereo: left the clip, right the clip halved and
  rounded to 16 bits by the writer: the expected mono is the two channels read back, averaged); the expected mono samples are the int16 values read by
  scipy.io.wavfile / 32768, quantised to each width as libsndfile's writer does (recorded, not recomputed: the
  expected file of each is what soundfile reads back, checked here against scipy's within one step of the width).
- bell.oga: copied; its expected samples are soundfile's decode (libsndfile 1.2.2 bundled in the wheel, libvorbis),
  channels averaged.
- resample-*.f32: scipy.signal.resample_poly(x, up, down) in float64 of the decoded clip, stored as float32.
manifest.json lists each file with its rate, channel count and expected sample file. Idempotent; nothing is
committed."""
import argparse, json, os, shutil, sys

import numpy as np
import scipy.io.wavfile
import scipy.signal
import soundfile as sf

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
FSDD = os.environ.get("FSDD_DIR") or os.path.join(os.path.dirname(REPO), "shared", "datasets", "fsdd")
BELL = "/usr/share/sounds/freedesktop/stereo/bell.oga"

# name: (soundfile format, subtype, the step of that width in [-1, 1))
WAVS = {
    "speech-u8.wav": ("WAV", "PCM_U8", 2 ** -7),
    "speech-16.wav": ("WAV", "PCM_16", 2 ** -15),
    "speech-24.wav": ("WAV", "PCM_24", 2 ** -23),
    "speech-32.wav": ("WAV", "PCM_32", 2 ** -31),
    "speech-float.wav": ("WAV", "FLOAT", 0),
    "speech-double.wav": ("WAV", "DOUBLE", 0),
    "speech.flac": ("FLAC", "PCM_16", 2 ** -15),
}


def f32(path, x):
    np.asarray(x, dtype="<f4").tofile(path)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(REPO, ".build", "audio"))
    out = ap.parse_args().out
    os.makedirs(out, exist_ok=True)
    src = os.path.join(FSDD, "recordings", "0_jackson_0.wav")
    rate, pcm = scipy.io.wavfile.read(src)
    assert pcm.dtype == np.int16 and rate == 8000, (pcm.dtype, rate)
    x = pcm.astype(np.float64) / 32768
    files = []
    for name, (fmt, subtype, step) in WAVS.items():
        path = os.path.join(out, name)
        sf.write(path, x, rate, format=fmt, subtype=subtype)
        back, _ = sf.read(path, dtype="float32")
        assert np.max(np.abs(back - x)) <= max(step, 1e-7), (name, np.max(np.abs(back - x)))
        f32(path + ".f32", back)
        files.append({"file": name, "rate": rate, "channels": 1, "expected": name + ".f32"})
    stereo = np.stack([x, x / 2], axis=1)
    sf.write(os.path.join(out, "speech-stereo.wav"), stereo, rate, subtype="PCM_16")
    back, _ = sf.read(os.path.join(out, "speech-stereo.wav"), dtype="float64")
    assert np.array_equal(back[:, 0], x) and np.max(np.abs(back[:, 1] - x / 2)) <= 2 ** -16
    f32(os.path.join(out, "speech-stereo.wav.f32"), back.mean(axis=1))
    files.append({"file": "speech-stereo.wav", "rate": rate, "channels": 2, "expected": "speech-stereo.wav.f32"})
    shutil.copyfile(BELL, os.path.join(out, "bell.oga"))
    bell, bell_rate = sf.read(BELL, dtype="float64")
    f32(os.path.join(out, "bell.oga.f32"), bell.mean(axis=1))
    files.append({"file": "bell.oga", "rate": bell_rate, "channels": bell.shape[1], "expected": "bell.oga.f32"})

    resampled = []
    for name, signal, up, down in [("resample-speech-8000-16000.f32", x, 2, 1),
                                   ("resample-bell-44100-16000.f32", bell.mean(axis=1), 160, 441),
                                   ("resample-speech-8000-22050.f32", x, 441, 160)]:
        f32(os.path.join(out, name), scipy.signal.resample_poly(signal, up, down))
        resampled.append({"file": name, "up": up, "down": down,
                          "source": "speech-16.wav" if signal is x else "bell.oga"})
    with open(os.path.join(out, "manifest.json"), "w") as f:
        json.dump({"decode": files, "resample": resampled, "scipy": scipy.__version__,
                   "soundfile": sf.__version__, "libsndfile": sf.__libsndfile_version__}, f, indent=1)
    print(f"make_audio: {len(files)} files, {len(resampled)} resamplings in {out}")


if __name__ == "__main__":
    sys.exit(main())
