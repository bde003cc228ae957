#!/usr/bin/env python3
"""The checks behind `make example` (run by `make test`) and `make api-docs`.

  examples.py api-docs
      Writes Examples/ClassifyPhotos/Sources/APIDocs/main.swift from docs/API.md (make example does, before it
      builds; commit the file with the page): every ```swift block becomes a function (its imports go to the top of
      the file, #sourceLocation points compiler errors at docs/API.md), and the file ends with a runner that calls
      them in order. Blocks fenced ```swift apple (Apple's frameworks) or ```swift package (a manifest) are shown,
      not compiled; any other ```swift qualifier is an error.
  examples.py classify-photos --example BIN --mltool BIN --work DIR
      Runs ClassifyPhotos on the six photos PhotoPredictTests uses (scikit-image, scikit-learn) and on a two-class
      Fashion-MNIST tree (bag, trouser: 20 PNGs each from datasets/fashion-mnist-small/train), and checks its output
      against `mltool predict --json` of the same images: part 1 with models/efficientnet-lite0.bin, part 2 with
      the model `mltool train` makes of the same folder. Same classes in the same order, probabilities within 1e-6.
  examples.py check-manifest
      The package Examples/ClassifyPhotos resolves (`swift package show-dependencies`: its product dependency is
      one mltool's manifest declares) and each of its targets is built by the root package too, as Example<name>
      from the same folder (make test builds those with the library instead of compiling the library again).
  examples.py run-api-docs --bin BIN --mltool BIN --work DIR
      Runs the APIDocs binary in DIR, filled with the files the examples name (photos, Fashion-MNIST folders, a
      small reviews table, models trained by `mltool train`, net.onnx and net.h5), and checks what they wrote.

Run from the repository root. A missing photo, data set or model fails under MLTOOL_REQUIRE_ORACLES=1 (make test)
and is reported as SKIPPED otherwise.
"""
import argparse
import json
import os
import random
import re
import shutil
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
API_MD = os.path.join(ROOT, "docs", "API.md")
API_SWIFT = os.path.join(ROOT, "Examples", "ClassifyPhotos", "Sources", "APIDocs", "main.swift")
EXTRACTOR = os.path.join(ROOT, "models", "efficientnet-lite0.bin")
FASHION = os.path.join(ROOT, "datasets", "fashion-mnist-small")
TOLERANCE = 1e-6


def fail(message):
    sys.exit(f"examples.py: FAILED: {message}")


def require(found, what):
    """Stops here when a prerequisite is missing: a failure under MLTOOL_REQUIRE_ORACLES=1, else a loud skip."""
    if found:
        return
    if os.environ.get("MLTOOL_REQUIRE_ORACLES") == "1":
        fail(f"{what} is missing (MLTOOL_REQUIRE_ORACLES=1: run `make models` and `make setup`)")
    print(f"examples.py: SKIPPED: {what} is missing")
    sys.exit(0)


# MARK: - docs/API.md → APIDocs/main.swift

def swift_blocks(markdown):
    """(line of the first code line, section title, code) for each ```swift block, in order."""
    blocks, title, lines = [], "", markdown.split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("## "):
            title = line[3:].strip()
        fence = re.match(r"^```(\S*)\s*(.*)$", line)
        if fence and fence.group(1):
            end = next((j for j in range(i + 1, len(lines)) if lines[j].startswith("```")), None)
            if end is None:
                fail(f"docs/API.md:{i + 1}: code block never closed")
            language, qualifier = fence.group(1), fence.group(2).strip()
            if language == "swift" and qualifier not in ("", "apple", "package"):
                fail(f"docs/API.md:{i + 1}: unknown block kind '```swift {qualifier}' (apple, package or none)")
            if language == "swift" and qualifier == "":
                blocks.append((i + 2, title, "\n".join(lines[i + 1:end])))
            i = end
        i += 1
    return blocks


def swift_string(text):
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def api_docs_source():
    with open(API_MD, encoding="utf-8") as f:
        blocks = swift_blocks(f.read())
    if not blocks:
        fail("docs/API.md has no ```swift blocks")
    imports = {"Foundation", "MLTool"}
    functions, entries = [], []
    for n, (line, title, code) in enumerate(blocks, 1):
        body, code_lines = [], code.split("\n")
        # Leading imports and blank lines go; the #sourceLocation line moves down with them.
        while code_lines and (not code_lines[0].strip() or code_lines[0].startswith("import ")):
            if code_lines[0].strip():
                imports.add(code_lines[0].split()[1])
            code_lines.pop(0)
            line += 1
        for text in code_lines:
            m = re.match(r"^import (\w+)$", text.strip())
            if m:
                imports.add(m.group(1))
                body.append("")            # keeps the line numbers
            else:
                body.append(("    " + text) if text else "")
        functions.append(
            f"/// docs/API.md:{line}, {title}\n"
            f"func example{n}() {'async ' if 'await' in code else ''}throws {{\n"
            f"#sourceLocation(file: \"docs/API.md\", line: {line})\n"
            + "\n".join(body) + "\n"
            "#sourceLocation()\n"
            "}\n")
        entries.append(f"    ({swift_string(f'docs/API.md:{line} {title}')}, example{n}),")
    return (
        "// Generated from docs/API.md by `make api-docs` (Examples/examples.py): every ```swift block of the page,\n"
        "// wrapped in a function, and a runner that calls them in order in the current folder. Do not edit.\n"
        + "".join(f"import {name}\n" for name in sorted(imports)) + "\n"
        + "\n".join(functions) + "\n"
        "let examples: [(String, @Sendable () async throws -> Void)] = [\n" + "\n".join(entries) + "\n]\n"
        "var failures = 0\n"
        "for (location, example) in examples {\n"
        "    let started = Date()\n"
        "    do {\n"
        "        try await example()\n"
        "        print(\"ok      \\(location) (\\(Int(Date().timeIntervalSince(started) * 1000)) ms)\")\n"
        "    } catch {\n"
        "        failures += 1\n"
        "        print(\"FAILED  \\(location): \\(error)\")\n"
        "    }\n"
        "}\n"
        "exit(failures == 0 ? 0 : 1)\n")


def api_docs():
    """Writes the APIDocs target's source, only when it changes (an unchanged file is not rebuilt)."""
    source = api_docs_source()
    current = open(API_SWIFT, encoding="utf-8").read() if os.path.exists(API_SWIFT) else None
    relative = os.path.relpath(API_SWIFT, ROOT)
    if current == source:
        print(f"api-docs: {relative} is up to date ({source.count('func example')} examples)")
        return
    os.makedirs(os.path.dirname(API_SWIFT), exist_ok=True)
    with open(API_SWIFT, "w", encoding="utf-8") as f:
        f.write(source)
    print(f"api-docs: wrote {relative} ({source.count('func example')} examples)")


# MARK: - Fixtures

def photos():
    """The six photos that ship with scikit-image and scikit-learn (PhotoPredictTests uses the same ones)."""
    try:
        import skimage
        import sklearn
    except ImportError:
        return {}
    s = os.path.join(os.path.dirname(skimage.__file__), "data")
    l = os.path.join(os.path.dirname(sklearn.__file__), "datasets", "images")
    found = {f: os.path.join(d, f) for d, f in [(s, "chelsea.png"), (s, "coffee.png"), (s, "rocket.jpg"),
                                                (s, "astronaut.png"), (l, "china.jpg"), (l, "flower.jpg")]}
    return {f: p for f, p in found.items() if os.path.isfile(p)}


def labeled_folders(out, split, count, labels=("bag", "trouser")):
    """A label-folder tree of the first `count` Fashion-MNIST PNGs of each label (file order)."""
    for label in labels:
        source = os.path.join(FASHION, split, label)
        require(os.path.isdir(source), f"{source} (bash datasets/fashion-mnist.sh --small)")
        os.makedirs(os.path.join(out, label))
        for name in sorted(os.listdir(source))[:count]:
            shutil.copy(os.path.join(source, name), os.path.join(out, label, name))


def fresh(work):
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    return os.path.abspath(work)


def run(command, cwd=ROOT, env=None):
    result = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True)
    if result.returncode != 0:
        fail(f"{' '.join(command)} exited {result.returncode}:\n{result.stdout}{result.stderr}")
    return result.stdout


def with_cache(path):
    """The environment with its own feature cache, and the extractor found as in a fresh checkout."""
    env = dict(os.environ)
    env["MLTOOL_CACHE"] = path
    env.pop("MLTOOL_EXTRACTOR", None)
    return env


# MARK: - ClassifyPhotos

def compare(name, mine, theirs):
    """Largest probability difference between ClassifyPhotos' line and mltool predict's, after checking classes."""
    if mine["file"] != theirs["file"]:
        fail(f"{name}: ClassifyPhotos printed {mine['file']} where mltool printed {theirs['file']}")
    ids = [c["identifier"] for c in mine["top"]]
    expected = [c["label"] for c in theirs["top"]]
    if ids != expected:
        fail(f"{name} {mine['file']}: classes {ids}, mltool predict {expected}")
    worst = max(abs(c["confidence"] - t["probability"]) for c, t in zip(mine["top"], theirs["top"]))
    if worst > TOLERANCE:
        fail(f"{name} {mine['file']}: probabilities differ by {worst:.3g} (> {TOLERANCE})")
    return worst


def predictions(text):
    return [json.loads(line) for line in text.splitlines() if line.startswith("{")]


def classify_photos(example, mltool, work):
    found = photos()
    require(len(found) == 6, "the six photos of scikit-image and scikit-learn")
    require(os.path.isfile(EXTRACTOR), "models/efficientnet-lite0.bin (make models)")
    work = fresh(work)
    photo_dir, clothes = os.path.join(work, "photos"), os.path.join(work, "clothes")
    os.makedirs(photo_dir)
    for name, path in found.items():
        shutil.copy(path, os.path.join(photo_dir, name))
    labeled_folders(clothes, "train", 20)

    # From the repository root, as a user in a checkout would: the example finds ./models/efficientnet-lite0.bin.
    started = time.monotonic()
    out = run([example, photo_dir, clothes], env=with_cache(os.path.join(work, "cache-example")))
    seconds = time.monotonic() - started
    lines = out.splitlines()
    trained = [i for i, line in enumerate(lines) if line.startswith("trained ")]
    if len(trained) != 1:
        fail(f"ClassifyPhotos printed no single 'trained' line:\n{out}")
    part1, part2 = predictions("\n".join(lines[:trained[0]])), predictions("\n".join(lines[trained[0] + 1:]))

    # Part 1: the ImageNet top 5 of every photo, as `mltool predict` gives them.
    reference = predictions(run([mltool, "predict", EXTRACTOR, photo_dir, "--json", "--top", "5"]))
    if len(part1) != 6 or len(reference) != 6:
        fail(f"expected 6 photos, ClassifyPhotos printed {len(part1)}, mltool predict {len(reference)}")
    worst1 = max(compare("photos", m, t) for m, t in zip(part1, reference))
    chelsea = next(p for p in part1 if p["file"].endswith("chelsea.png"))
    if chelsea["top"][0]["identifier"] not in ("tabby, tabby cat", "tiger cat"):
        fail(f"chelsea.png is a tabby/tiger cat, ClassifyPhotos says {chelsea['top'][0]}")

    # Part 2: the classifier trained on bag/trouser, against the one `mltool train` makes of the same folder
    # (its own feature cache: the features are computed again).
    m = re.match(r"trained \[\"bag\", \"trouser\"\]: holdout accuracy ([0-9.]+)$", lines[trained[0]])
    if not m:
        fail(f"unexpected training line: {lines[trained[0]]}")
    holdout = float(m.group(1))
    if holdout < 0.9:
        fail(f"bag vs trouser: holdout accuracy {holdout} < 0.9")
    samples = [os.path.join(clothes, label, name) for label in ("bag", "trouser")
               for name in sorted(os.listdir(os.path.join(clothes, label)))[:2]]
    if [p["file"] for p in part2] != samples:
        fail(f"ClassifyPhotos classified {[p['file'] for p in part2]}, expected {samples}")
    for p in part2:
        label = os.path.basename(os.path.dirname(p["file"]))
        if p["top"][0]["identifier"] != label:
            fail(f"{p['file']} is a {label}, the trained classifier says {p['top'][0]}")
    model = os.path.join(work, "clothes.bin")
    run([mltool, "train", clothes, "-o", model, "--quiet"], env=with_cache(os.path.join(work, "cache-cli")))
    reference = predictions(run([mltool, "predict", model] + samples + ["--json", "--top", "2"]))
    worst2 = max(compare("clothes", m, t) for m, t in zip(part2, reference))
    print(f"classify-photos: 6 photos, the same top 5 as mltool predict (largest difference {worst1:.2g}); "
          f"bag/trouser holdout accuracy {holdout}, 4 images as mltool train + predict gives them "
          f"(largest difference {worst2:.2g}); ClassifyPhotos ran in {seconds:.1f} s")


# MARK: - Running the API.md examples

def reviews_csv(path):
    """A small two-class table of made-up product reviews (seeded)."""
    words = {
        "positive": ["great", "love", "excellent", "fast", "bright", "comfortable", "reliable", "perfect"],
        "negative": ["broke", "slow", "refund", "disappointed", "cracked", "noisy", "useless", "flimsy"],
    }
    things = ["screen", "battery", "keyboard", "case", "charger", "speaker"]
    rng = random.Random(42)
    with open(path, "w", encoding="utf-8") as f:
        f.write("text,label\n")
        for i in range(60):
            label = "positive" if i % 2 == 0 else "negative"
            a, b = rng.sample(words[label], 2)
            f.write(f"\"The {rng.choice(things)} is {a}, {b} after a week\",{label}\n")


def run_api_docs(binary, mltool, work):
    found = photos()
    require("chelsea.png" in found, "scikit-image's chelsea.png")
    for path in (EXTRACTOR, os.path.join(ROOT, "models", "efficientnet-lite0.onnx")):
        require(os.path.isfile(path), f"{os.path.relpath(path, ROOT)} (make models)")
    work = fresh(work)
    os.makedirs(os.path.join(work, "models"))
    os.symlink(EXTRACTOR, os.path.join(work, "models", "efficientnet-lite0.bin"))
    # The bundled models the examples find with no path (./models/, as a user's program run from a checkout does).
    for name in ("language-id.bin", "pos-en.bin", "ner-en.bin"):
        path = os.path.join(ROOT, "models", name)
        require(os.path.isfile(path), f"models/{name} (make models)")
        os.symlink(path, os.path.join(work, "models", name))
    os.symlink(os.path.join(ROOT, "models", "efficientnet-lite0.onnx"), os.path.join(work, "net.onnx"))
    shutil.copy(os.path.join(ROOT, "models", "imagenet-labels.txt"), os.path.join(work, "labels.txt"))
    shutil.copy(os.path.join(ROOT, "Tests", "Fixtures", "keras", "k3_mlp.h5"), os.path.join(work, "net.h5"))
    from PIL import Image
    Image.open(found["chelsea.png"]).convert("RGB").save(os.path.join(work, "cat.jpg"), quality=95)
    labeled_folders(os.path.join(work, "Clothes"), "train", 20)
    labeled_folders(os.path.join(work, "Clothes-test"), "test", 10)
    bag = os.path.join(work, "Clothes-test", "bag")
    shutil.copy(os.path.join(bag, sorted(os.listdir(bag))[0]), os.path.join(work, "bag.png"))
    reviews_csv(os.path.join(work, "reviews.csv"))
    # The word-tagging example: UD English EWT's dev split with names and numbers as BIO entities.
    subprocess.run(["bash", os.path.join(ROOT, "datasets", "ud-english-ewt.sh")], check=True, stdout=subprocess.DEVNULL)
    shutil.copy(os.path.join(ROOT, "datasets", "ud-english-ewt", "entities-dev.bio"), os.path.join(work, "names.bio"))
    # The tabular example: PimaIndiansDiabetes2's fixed split (datasets/tabular.sh).
    subprocess.run(["bash", os.path.join(ROOT, "datasets", "tabular.sh")], check=True, stdout=subprocess.DEVNULL)
    shutil.copy(os.path.join(ROOT, "datasets", "tabular", "pima", "train.csv"), os.path.join(work, "diabetes.csv"))
    shutil.copy(os.path.join(ROOT, "datasets", "tabular", "pima", "test.csv"), os.path.join(work, "diabetes-test.csv"))
    env = with_cache(os.path.join(work, "cache"))
    # The models the classifying examples read before the training examples (re)write them.
    run([os.path.abspath(mltool), "train", "Clothes", "-o", "Clothes.bin", "--quiet"], cwd=work, env=env)
    run([os.path.abspath(mltool), "train", "reviews.csv", "-o", "Reviews.bin", "--quiet", "--min-count", "1"],
        cwd=work, env=env)

    started = time.monotonic()
    result = subprocess.run([os.path.abspath(binary)], cwd=work, env=env, capture_output=True, text=True)
    seconds = time.monotonic() - started
    count = api_docs_source().count("func example")
    ok = [line for line in result.stdout.splitlines() if line.startswith("ok      docs/API.md:")]
    if result.returncode != 0 or len(ok) != count:
        fail(f"APIDocs exited {result.returncode}, {len(ok)} of {count} examples ok:\n{result.stdout}{result.stderr}")
    if "language: de" not in result.stdout:
        fail("the NLLanguageRecognizer example did not find German:\n" + result.stdout)
    if "Barack Obama PersonalName" not in result.stdout or "de Das ist ein Haus." not in result.stdout:
        fail("the NLTagger example did not find the name or the German sentence:\n" + result.stdout)
    if "tiger cat" not in result.stdout:
        fail("the VNClassifyImageRequest example did not find a tiger cat in cat.jpg:\n" + result.stdout)
    for name in ("Clothes-int8.bin", "Clothes.pal4.bin", "Clothes.onnx", "Clothes.mlmodel", "net.bin",
                 "Clothes-report.html", "Names.bin", "Diabetes.bin"):
        if not os.path.isfile(os.path.join(work, name)) or os.path.getsize(os.path.join(work, name)) == 0:
            fail(f"the examples did not write {name}")
    print(f"run-api-docs: all {count} examples of docs/API.md ran in {seconds:.1f} s")


# MARK: - the example package's manifest

def described_targets(package_path):
    """[(name, path, product dependencies)] of `swift package describe --type json` for the package at package_path."""
    out = subprocess.run(["swift", "package", "--package-path", package_path, "describe", "--type", "json"],
                         capture_output=True, text=True)
    if out.returncode != 0:
        fail(f"swift package describe {package_path}: {out.stderr.strip()}")
    return [(t["name"], t["path"], t.get("product_dependencies", [])) for t in json.loads(out.stdout)["targets"]]


def check_manifest():
    example = os.path.join(ROOT, "Examples", "ClassifyPhotos")
    resolved = subprocess.run(["swift", "package", "--package-path", example, "show-dependencies"],
                              capture_output=True, text=True)
    if resolved.returncode != 0:
        fail(f"Examples/ClassifyPhotos/Package.swift does not resolve: {resolved.stderr.strip()}")
    root = {name: path for name, path, _ in described_targets(ROOT)}
    targets = described_targets(example)
    for name, path, products in targets:
        if products != ["MLTool"]:
            fail(f"Examples/ClassifyPhotos target {name} depends on {products}, not on the MLTool product alone")
        if root.get("Example" + name) != os.path.join("Examples", "ClassifyPhotos", path):
            fail(f"Package.swift has no target Example{name} with path Examples/ClassifyPhotos/{path}: "
                 "make test would not build that program")
    print(f"check-manifest: Examples/ClassifyPhotos resolves; its {len(targets)} targets are built as "
          + ", ".join("Example" + name for name, _, _ in targets))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("api-docs")
    sub.add_parser("check-manifest")
    for name, flag in (("classify-photos", "--example"), ("run-api-docs", "--bin")):
        p = sub.add_parser(name)
        p.add_argument(flag, required=True, dest="binary")
        p.add_argument("--mltool", required=True)
        p.add_argument("--work", required=True)
    args = parser.parse_args()
    if args.command == "api-docs":
        api_docs()
    elif args.command == "check-manifest":
        check_manifest()
    elif args.command == "classify-photos":
        classify_photos(args.binary, args.mltool, args.work)
    else:
        run_api_docs(args.binary, args.mltool, args.work)


if __name__ == "__main__":
    main()
