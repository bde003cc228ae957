#!/usr/bin/env python3
"""The WordPiece oracle of WordPieceTokenizerTests: Hugging Face's `tokenizers` (pip tokenizers==0.23.3) on real text.

Request (stdin): {"tokenizer": tokenizer.json, "translations": datasets/language-id/test.csv,
"ewt": an EWT .conllu, "per_language": N}. The texts, in this order: of each language of the translations' test
split (21 languages, Latin, Cyrillic, CJK and Hangul scripts), its first N synopses and first N descriptions in
file order (multi-line, up to thousands of characters: truncation is exercised); then every `# text =` sentence of the
EWT file. Answer (stdout): {"texts": [...], "ids": [[...], ...]}: the ids `Tokenizer.encode` gives with the file's
own settings (truncation included) and padding off."""
import collections, csv, json, sys

from tokenizers import Tokenizer

request = json.load(sys.stdin)
texts, taken = [], collections.Counter()
with open(request["translations"], newline="", encoding="utf-8") as f:
    for row in csv.DictReader(f):
        key = (row["label"], row["kind"])
        if row["kind"] in ("synopsis", "description") and taken[key] < request["per_language"]:
            taken[key] += 1
            texts.append(row["text"])
with open(request["ewt"], encoding="utf-8") as f:
    texts += [line[len("# text = "):].rstrip("\n") for line in f if line.startswith("# text = ")]
tokenizer = Tokenizer.from_file(request["tokenizer"])
tokenizer.no_padding()
ids = [e.ids for e in tokenizer.encode_batch(texts)]
json.dump({"texts": texts, "ids": ids}, sys.stdout, ensure_ascii=False)
