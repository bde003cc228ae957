#!/usr/bin/env python3
"""Re-measures the text classifier's short-text rule (`TextClassifierParameters.shortTexts`) on VALIDATION splits.

The rule gives training sets whose median document has at most 20 words character n-grams 3-5 within words and min
count 1, and longer texts word 1-2-grams with min count 2. This script trains both feature sets on each real data set
below and prints, per set, the median words per training document, the validation accuracy of each (the trainer's own
seeded validation split of the training file: what the rule may be chosen on) and, only reported, the test accuracy;
then the default training (no feature flag): which features it kept and its test accuracy.

    python3 bench/short_texts.py [--mltool .build/release/mltool] [--out .build/short-texts]

Data (real text only; a set whose source is absent is printed as skipped with the reason):
- Debian synopses and long descriptions → Section (`datasets/debian-descriptions.sh [--short]`), whole training
  files and the first 3,000 / 1,000 training documents (by sha256 of the package name);
- UD English EWT sentences → genre (answers, email, newsgroup, reviews, weblog: the sent_id prefix), from
  `datasets/ud-english-ewt` (train → training file, test → test file), whole and 3,000 / 1,000;
- Debian's fortune quotations → the fortune file they come from (files with ≥ 40 quotations), split 80/20 by sha256
  of the quotation (`datasets/fortunes.sh`: the pinned fortunes and fortunes-min .debs).
"""
import argparse
import csv
import hashlib
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def digest(s):
    return hashlib.sha256(s.encode("utf-8")).hexdigest()


def read_csv(path):
    with open(path, newline="", encoding="utf-8") as f:
        return [(r["text"], r["label"], r.get("package") or r["text"]) for r in csv.DictReader(f)]


def debian(short):
    folder = os.path.join(ROOT, "datasets", "debian-synopses" if short else "debian-descriptions")
    if not os.path.exists(os.path.join(folder, "train.csv")):
        return None, "run datasets/debian-descriptions.sh" + (" --short" if short else "")
    return (read_csv(os.path.join(folder, "train.csv")), read_csv(os.path.join(folder, "test.csv"))), None


def ewt():
    folder = os.path.join(ROOT, "datasets", "ud-english-ewt")
    if not os.path.exists(os.path.join(folder, "en_ewt-ud-train.conllu")):
        return None, "run datasets/ud-english-ewt.sh"

    def sentences(name):
        out, genre = [], None
        with open(os.path.join(folder, name), encoding="utf-8") as f:
            for line in f:
                if line.startswith("# sent_id = "):
                    genre = line[len("# sent_id = "):].split("-", 1)[0].strip()
                elif line.startswith("# text = ") and genre:
                    text = line[len("# text = "):].strip()
                    out.append((text, genre, text))
        return out
    return (sentences("en_ewt-ud-train.conllu"), sentences("en_ewt-ud-test.conllu")), None


def fortunes():
    folder = os.path.join(ROOT, "datasets", "fortunes")
    if not os.path.exists(os.path.join(folder, "train.csv")):
        return None, "run bash datasets/fortunes.sh"
    return (read_csv(os.path.join(folder, "train.csv")), read_csv(os.path.join(folder, "test.csv"))), None


def first(rows, n):
    return sorted(rows, key=lambda r: digest(r[2]))[:n]


def write(path, rows):
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["text", "label"])
        for text, label, _ in rows:
            w.writerow([text, label])


def train(mltool, folder, flags):
    model = os.path.join(folder, "m.bin")
    r = subprocess.run([mltool, "train", "train.csv", "--test", "test.csv", "-o", model] + flags,
                       cwd=folder, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"mltool train failed in {folder}: {r.stderr}")
    info = subprocess.run([mltool, "info", model, "--json"], capture_output=True, text=True, check=True)
    metrics = json.loads(info.stdout)["metrics"]
    notes = [line for line in (r.stdout + r.stderr).splitlines() if "short texts (median" in line]
    return metrics["validation.accuracy"], metrics["holdout.accuracy"], notes


FEATURES = {"words": ["--min-count", "2"], "short": ["--char-ngrams", "3-5", "--min-count", "1"]}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mltool", default=os.path.join(ROOT, ".build", "release", "mltool"))
    ap.add_argument("--out", default=os.path.join(ROOT, ".build", "short-texts"))
    args = ap.parse_args()
    sets = []
    for name, (data, why) in [("Debian synopses", debian(True)), ("EWT sentences → genre", ewt()),
                              ("fortunes → file", fortunes()), ("Debian long descriptions", debian(False))]:
        if data is None:
            print(f"{name}: skipped: {why}")
            continue
        sets.append((name, data[0], data[1]))
        if name != "fortunes → file":
            sets += [(f"{name}, 3,000", first(data[0], 3000), data[1]), (f"{name}, 1,000", first(data[0], 1000), data[1])]
    print("| set | train docs | median words | validation words / short | test words / short | default: features, test |")
    print("|---|---|---|---|---|---|")
    for name, tr, te in sets:
        folder = os.path.join(args.out, digest(name)[:12])
        os.makedirs(folder, exist_ok=True)
        write(os.path.join(folder, "train.csv"), tr)
        write(os.path.join(folder, "test.csv"), te)
        median = statistics.median(len(t.split()) for t, _, _ in tr)
        (vw, tw, _), (vs, ts, _) = (train(args.mltool, folder, FEATURES[k]) for k in ("words", "short"))
        _, ta, notes = train(args.mltool, folder, [])
        chosen = "short" if any(": character n-grams" in n for n in notes) else "words"
        print(f"| {name} | {len(tr)} | {median:g} | {vw:.3f} / {vs:.3f} | {tw:.3f} / {ts:.3f} | {chosen}, {ta:.3f} |",
              flush=True)


if __name__ == "__main__":
    main()
