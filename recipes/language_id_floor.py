"""The confidence floor of LanguageRecognizer (LanguageRecognizer.defaultMinimumConfidence), from the validation split.

    python3 recipes/language_id_floor.py [--model models/language-id.bin] [--data datasets/language-id/validation.csv]

Runs `mltool predict --top 1` on every validation text and prints the quantiles of the top probability; the floor is
the highest multiple of 0.05 that refuses at most 1% of the texts. Only the validation split is read: the test and
cross-domain splits never choose it.
"""
import argparse, csv, json, os, subprocess, sys, tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", default=os.path.join(ROOT, "models/language-id.bin"))
    p.add_argument("--data", default=os.path.join(ROOT, "datasets/language-id/validation.csv"))
    p.add_argument("--mltool", default=os.path.join(ROOT, ".build/release/mltool"))
    a = p.parse_args()
    with open(a.data, encoding="utf-8", newline="") as f:
        texts = [r["text"] for r in csv.DictReader(f)]
    with tempfile.TemporaryDirectory(prefix="mltool-floor-") as tmp:
        for i, t in enumerate(texts):
            with open(os.path.join(tmp, f"{i:06d}.txt"), "w", encoding="utf-8") as f:
                f.write(t)
        out = subprocess.run([a.mltool, "predict", a.model, tmp, "--json", "--top", "1"], capture_output=True,
                             text=True, check=True).stdout
    top = sorted(json.loads(l)["top"][0]["probability"] if json.loads(l)["top"] else 0.0 for l in out.splitlines())
    for q in (0.001, 0.005, 0.01, 0.02, 0.05, 0.1):
        print(f"quantile {q:5.3f}: {top[int(q * len(top))]:.4f}")
    floor = max(f / 20 for f in range(20) if sum(t < f / 20 for t in top) <= 0.01 * len(top))
    print(f"floor (refuses at most 1% of {len(top)} validation texts): {floor:.2f}")


if __name__ == "__main__":
    sys.exit(main())
