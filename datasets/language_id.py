"""The language-identification data set from pinned Debian files (datasets/language-id.sh runs this).

    python3 language_id.py pin MANIFEST              rewrite MANIFEST from today's bookworm mirror (apt's lists)
    python3 language_id.py build MANIFEST FILES OUT  OUT/{train,validation,test,cross}.csv from the files in FILES

Sources, each with its cleaning rule:
- "description", "synopsis", "fragment": Debian's translated package descriptions (Translation-<code>, joined to
  Translation-en on Description-md5). Kept as before: the synopsis, the whole description, two runs of whole words
  (5-40 characters, seeded by sha256(label + package); unspaced scripts cut at any character). Dropped when left in
  English: a synopsis equal to the English one, a description with half or more of its lines in the English text, a
  fragment with half or more of its words in it.
- "message": gettext catalogues (.mo, read here by `mo_messages`) in usr/share/locale/<locale>/LC_MESSAGES of the
  pinned .debs; the first plural form; the msgctxt dropped. Cleaned: markup (<b>, &amp;), printf/Python/.NET/shell
  placeholders (%s, %1$d, %(name)s, {0}, {name}, ${VAR}), accelerators (_File, &File, a trailing (_F) of CJK
  translations), escapes (\\n, \\t) and tokens that are not words (paths, URLs, options such as --all, identifiers
  with _ = @ or digits, tokens without a letter such as the quotes a placeholder leaves) removed; whitespace
  collapsed. Dropped when left in English: the translation equals the msgid (case and accelerators aside) or half
  or more of its words are words of the msgid. English itself comes from the msgids, with the same cleaning.
- "desktop": Name[xx]= and Comment[xx]= of the .desktop files in the same .debs, the same cleaning and English rule
  against Name= / Comment=.
Every source: texts with fewer than 2 letters dropped; texts over 400 characters cut at a space; a text that occurs
under more than one label is dropped everywhere; repeats within a label keep the first source (sorted).

Labels: BCP 47 as NaturalLanguage's NLLanguage writes them. A locale's region is dropped (pt_BR → pt, de_CH → de)
except Chinese (zh_CN, zh_SG → zh-Hans; zh_TW, zh_HK → zh-Hant); no → nb; ca@valencia → ca; Serbian is labelled by
the script of each text (sr for Cyrillic, sr-Latn for Latin), so a Latin string left in a Cyrillic catalogue is not
called Cyrillic; other @variants (be@latin, en@shaw, uz@cyrillic) and English regional locales are dropped.
LANGUAGES is the label set: NLLanguageRecognizer's languages that Debian has text for (all but Cherokee, Tibetan and
Lao, which none of the pinned files has enough of), and the European languages Debian translates most (Serbian in
both scripts, Basque, Galician, Esperanto, the Baltic languages, ...). A label needs 200 training texts (else it is
left out and listed in SOURCE).

Split, by *source* package (the Source: of Packages.xz; a binary package missing from it is its own source): all
of a source's texts go to one file. The command-line tools' catalogues (CROSS_DOMAIN below: GNU tools, util-linux,
glibc, apt, dpkg, debconf, gnupg, man-db, e2fsprogs) are held out whole as cross.csv: error messages and option help,
a register the training sources (descriptions and desktop programs' interfaces) hardly have, so cross.csv measures
how the recognizer does outside the domains it learned. The other sources go by sha256("split:" + source): the lowest
20% to test.csv, the next 10% to validation.csv (for choices such as the "und" floor), the rest to train.csv.
Caps (CAPS) keep training time near the 21-language model's: per label at most 10000 training texts from
descriptions and 1500 from catalogues and desktop files (fewer when it has fewer), 1000 and 600 in test, 500 and
300 in validation, and at most 500 texts in cross. The description cap was chosen on the validation split (model of
the Makefile's flags; accuracy on all of validation / on the descriptions of the 21 languages of the
descriptions-only model): 6000 0.9418 / 0.9667, 10000 0.9424 / 0.9702, 20000 0.9415 / 0.9718 (52 s of training
against 40 s). Within a cap, sources in sha256 order and each source's texts in sha256 order (deterministic, not
alphabetical).
"""
import bz2, csv, hashlib, io, lzma, multiprocessing, os, random, re, struct, subprocess, sys, tarfile
from collections import defaultdict

# Desktop programs' interfaces: training, validation and test (split by source).
DESKTOP = ["libgtk-3-common", "libgtk2.0-common", "libglib2.0-data", "libgdk-pixbuf2.0-common",
           "gnome-control-center-data", "gnome-desktop3-data", "gnome-shell-common", "nautilus-data",
           "evince-common", "gedit-common", "file-roller", "totem-common", "zenity-common", "gnome-calculator",
           "cinnamon-l10n", "mate-desktop-common", "libxfce4ui-common", "mousepad", "xfce4-session"]
# Command-line tools: the cross-domain test, never trained on.
CROSS_DOMAIN = ["coreutils", "tar", "grep", "sed", "wget", "nano", "diffutils", "findutils", "util-linux-locales",
                "libc-l10n", "e2fsprogs-l10n", "gnupg-l10n", "man-db", "apt", "dpkg", "debconf-i18n", "gettext-base"]
TRANSLATIONS = ["en", "ca", "cs", "da", "de", "de_DE", "el", "eo", "es", "eu", "fi", "fr", "gl", "hr", "hu", "id",
                "it", "ja", "km", "ko", "nb", "nl", "pl", "pt", "pt_BR", "ro", "ru", "sk", "sr", "sv", "tr", "uk",
                "vi", "zh_CN", "zh_TW"]
MIRROR, SECURITY = "http://deb.debian.org/debian", "http://deb.debian.org/debian-security"
NL_LANGUAGES = ["am", "ar", "hy", "bn", "bg", "my", "ca", "hr", "cs", "da", "nl", "en", "fi", "fr", "ka", "de", "el",
                "gu", "he", "hi", "hu", "is", "id", "it", "ja", "kn", "kk", "km", "ko", "ms", "ml", "mr", "mn", "nb",
                "or", "fa", "pl", "pt", "pa", "ro", "ru", "zh-Hans", "si", "sk", "es", "sv", "ta", "te", "th",
                "zh-Hant", "tr", "uk", "ur", "vi"]
DEBIAN_EUROPEAN = ["sr", "sr-Latn", "eo", "eu", "gl", "et", "lt", "lv", "sl", "mk", "be", "sq", "nn", "bs", "af", "az",
                   "cy", "ga"]
LANGUAGES = set(NL_LANGUAGES + DEBIAN_EUROPEAN)
RELEASE = "/var/lib/apt/lists/deb.debian.org_debian_dists_bookworm_InRelease"
# Per label and split: at most this many texts from descriptions and from catalogues and desktop files.
CAPS = dict(train=(10000, 1500), validation=(500, 300), test=(1000, 600))
MIN_TRAIN = 200
MAX_CHARS = 400


def sha(s):
    return hashlib.sha256(s.encode()).hexdigest()


# --- pinning ---------------------------------------------------------------------------------------------------

def pin(manifest):
    """The manifest from today's apt lists: Translation and Packages files by hash, .debs by version and hash."""
    release = open(RELEASE, encoding="utf-8").read()
    date = re.search(r"^Date: (.*)$", release, re.M).group(1)
    sha_section = release.split("SHA256:", 1)[1]
    hashes = {}
    for line in sha_section.splitlines()[1:]:
        if not line.startswith(" "): break
        h, size, name = line.split()
        hashes[name] = (h, size)
    rows = [f"# Debian bookworm, Release of {date}; pinned by datasets/language-id.sh --pin",
            "# kind name version size sha256 url"]
    for code in TRANSLATIONS:
        ext = "bz2" if f"main/i18n/Translation-{code}.bz2" in hashes else "xz"
        h, size = hashes[f"main/i18n/Translation-{code}.{ext}"]
        rows.append(f"translation Translation-{code}.{ext} bookworm {size} {h} {MIRROR}/dists/bookworm/main/i18n/by-hash/SHA256/{h}")
    h, size = hashes["main/binary-amd64/Packages.xz"]
    rows.append(f"index Packages.xz bookworm {size} {h} {MIRROR}/dists/bookworm/main/binary-amd64/by-hash/SHA256/{h}")
    for role, packages in (("deb", DESKTOP), ("cross", CROSS_DOMAIN)):
        for p in packages:
            show = subprocess.run(["apt-cache", "show", "--no-all-versions", p], capture_output=True, text=True,
                                  check=True).stdout
            field = lambda k: re.search(rf"^{k}: (.*)$", show, re.M).group(1).strip()
            path = field("Filename")
            mirror = SECURITY if path.startswith("pool/updates/") else MIRROR
            rows.append(f"{role} {p} {field('Version')} {field('Size')} {field('SHA256')} {mirror}/{path}")
    with open(manifest, "w") as f:
        f.write("\n".join(rows) + "\n")
    print(f"language-id: pinned {len(rows) - 2} files in {manifest}", file=sys.stderr)


def read_manifest(manifest):
    rows = []
    for line in open(manifest, encoding="utf-8"):
        if line.strip() and not line.startswith("#"):
            kind, name, version, size, h, path = line.split()[:6]
            rows.append(dict(kind=kind, name=name, version=version, file=os.path.basename(path)))
    return rows


# --- readers ---------------------------------------------------------------------------------------------------

class DataError(Exception):
    pass


def mo_messages(data, name):
    """(msgid, msgstr) pairs of a GNU .mo file; the first plural form; context dropped. Raises DataError."""
    if len(data) < 28: raise DataError(f"{name}: {len(data)} bytes, shorter than a .mo header")
    magic = struct.unpack_from("<I", data)[0]
    end = "<" if magic == 0x950412de else ">" if magic == 0xde120495 else None
    if end is None: raise DataError(f"{name}: magic {magic:#x}, expected 0x950412de")
    _, count, ids, strs = struct.unpack_from(end + "4I", data, 4)
    if ids + 8 * count > len(data) or strs + 8 * count > len(data):
        raise DataError(f"{name}: {count} strings overrun the file ({len(data)} bytes)")
    out = []
    for i in range(count):
        pair = []
        for table in (ids, strs):
            length, offset = struct.unpack_from(end + "2I", data, table + 8 * i)
            if offset + length > len(data): raise DataError(f"{name}: string {i} at {offset} overruns the file")
            pair.append(data[offset:offset + length].decode("utf-8", errors="replace"))
        msgid, msgstr = pair
        if not msgid: continue   # the header
        out.append((msgid.split("\x04")[-1].split("\x00")[0], msgstr.split("\x00")[0]))
    return out


def deb_members(path):
    """(locale-or-None, member name, bytes) of a .deb's .mo and .desktop files."""
    tar_bytes = subprocess.run(["dpkg-deb", "--fsys-tarfile", path], capture_output=True, check=True).stdout
    with tarfile.open(fileobj=io.BytesIO(tar_bytes)) as t:
        for m in t.getmembers():
            if not m.isfile(): continue
            parts = m.name.split("/")
            if m.name.endswith(".mo") and "locale" in parts and parts.index("locale") + 1 < len(parts):
                yield parts[parts.index("locale") + 1], m.name, t.extractfile(m).read()
            elif m.name.endswith(".desktop") and "/applications/" in m.name:
                yield None, m.name, t.extractfile(m).read()


def desktop_entries(data):
    """[(english, {locale: translation})] for Name and Comment of a .desktop file's [Desktop Entry]."""
    fields, section = defaultdict(dict), None
    for line in data.decode("utf-8", errors="replace").splitlines():
        if line.startswith("["): section = line.strip(); continue
        if section != "[Desktop Entry]" or "=" not in line: continue
        key, value = line.split("=", 1)
        m = re.fullmatch(r"(Name|Comment|GenericName)(?:\[([^\]]+)\])?", key.strip())
        if m: fields[m.group(1)][m.group(2)] = value.strip()
    return [(v.get(None, ""), {k: t for k, t in v.items() if k}) for v in fields.values()]


# --- labels and cleaning ---------------------------------------------------------------------------------------

def label_for(locale):
    """The label of a locale directory or Translation code, or None (dropped). Serbian is relabelled by script."""
    base, _, variant = locale.partition("@")
    lang, _, region = base.partition("_")
    if lang == "zh":
        return {"CN": "zh-Hans", "SG": "zh-Hans", "TW": "zh-Hant", "HK": "zh-Hant"}.get(region)
    if lang == "en": return "en" if not region and not variant else None
    if lang == "sr": return "sr"
    if variant and variant != "valencia": return None
    return {"no": "nb"}.get(lang, lang)


def script_label(label, text):
    if label != "sr": return label
    cyrillic = sum("\u0400" <= c <= "\u04ff" for c in text)
    latin = sum(c.isalpha() and c < "\u0250" for c in text)
    return "sr" if cyrillic >= latin else "sr-Latn"


PLACEHOLDER = re.compile(r"%(?:\d+\$)?(?:\([^)]*\))?[-+ #0']*(?:\d+|\*)?(?:\.(?:\d+|\*))?(?:hh|h|ll|l|L|q|j|z|t|I64)?"
                         r"[diouxXeEfFgGaAcspnm%]|\{[^{}]*\}|\$\{[^}]*\}|\$[A-Z_]+")
MARKUP = re.compile(r"<[^<>]{0,80}>")
ENTITY = {"&amp;": "&", "&lt;": "<", "&gt;": ">", "&quot;": '"', "&apos;": "'", "&nbsp;": " "}
NOT_A_WORD = re.compile(r"[0-9/\\=@_<>|]|^-|://|\.\w+\.")


def clean(text):
    """A catalogue or desktop string as plain text: see the module docstring."""
    text = text.replace("\\n", " ").replace("\\t", " ")
    text = MARKUP.sub(" ", text)
    for k, v in ENTITY.items(): text = text.replace(k, v)
    text = PLACEHOLDER.sub(" ", text)
    text = re.sub(r"\(\s*[_&]\w\s*\)", " ", text)              # CJK accelerators: 文件(_F)
    text = re.sub(r"(?<![\w&])[_&](?=\w)", "", text)           # _File, &File
    words = [w for w in text.split() if not NOT_A_WORD.search(w) and any(c.isalpha() for c in w)]
    return " ".join(words)


def letters(text):
    return sum(c.isalpha() for c in text)


def cut(text):
    if len(text) <= MAX_CHARS: return text
    space = text.rfind(" ", 0, MAX_CHARS)
    return text[:space if space > MAX_CHARS // 2 else MAX_CHARS]


def left_in_english(translation, english):
    a, b = translation.lower().split(), set(english.lower().split())
    return translation.lower() == english.lower() or (a and sum(w in b for w in a) * 2 >= len(a))


def fragments(label, pkg, text, count=2):
    """`count` runs of whole words (any characters for unspaced scripts), 5-40 characters, seeded."""
    rng = random.Random(sha(f"{label}:{pkg}"))
    flat = " ".join(text.split())
    out = []
    for _ in range(count):
        want = rng.randint(5, 40)
        if " " in flat:
            words = flat.split(" ")
            start = rng.randrange(len(words))
            piece = words[start]
            for w in words[start + 1:]:
                if len(piece) >= want: break
                piece += " " + w
        else:
            start = rng.randrange(max(len(flat) - want, 0) + 1)
            piece = flat[start:start + want]
        if len(piece) > 2 * want: piece = piece[:want]
        if len(piece) >= 5: out.append(piece)
    return out


# --- sources ---------------------------------------------------------------------------------------------------

def description_samples(files, translations, source_of):
    """(source, text, label, kind) from the Translation files."""
    from deb822 import long_text, stanzas
    by_code = {}
    for code, (path, compression) in sorted(translations.items()):
        entries = {}
        opener = lzma.open if compression == "xz" else bz2.open
        with opener(path, "rt", encoding="utf-8", errors="replace") as f, \
                open(path + ".txt", "w", encoding="utf-8") as g:
            g.write(f.read())
        for s in stanzas(path + ".txt"):
            md5, pkg, text = s.get("Description-md5"), s.get("Package"), s.get("Description-" + code)
            if md5 and pkg and text and md5 not in entries:
                t = long_text(text)
                if t: entries[md5] = (pkg, t)
        os.remove(path + ".txt")
        by_code[code] = entries
    english = by_code.get("en", {})
    for code, entries in sorted(by_code.items()):
        label = label_for(code)
        if label is None: continue
        for md5, (pkg, text) in sorted(entries.items(), key=lambda e: e[1][0]):
            synopsis = text.split("\n")[0].strip()
            en = english.get(md5, (None, ""))[1] if code != "en" else ""
            keep_synopsis = keep_text = True
            if code != "en":
                en_lines = {l.strip() for l in en.split("\n") if l.strip()}
                lines = [l.strip() for l in text.split("\n") if l.strip()]
                keep_synopsis = synopsis.lower() != en.split("\n")[0].strip().lower()
                keep_text = sum(l in en_lines for l in lines) * 2 < len(lines)
            english_words = {w.lower() for w in en.split()}
            src = source_of.get(pkg, pkg)
            lab = script_label(label, text)
            items = [("synopsis", synopsis, keep_synopsis), ("description", cut(text), keep_text)]
            items += [("fragment", f, keep_text) for f in fragments(lab, pkg, text)
                      if sum(w.lower() in english_words for w in f.split()) * 2 < len(f.split())]
            for kind, t, keep in items:
                if keep and letters(t) >= 2: yield src, t, lab, kind


def catalogue_samples(path, source):
    """(source, text, label, kind) from one .deb's catalogues and desktop files."""
    english, cleaned = set(), {}   # msgid → its cleaned text, once per package
    for locale, name, data in deb_members(path):
        if locale is not None:
            label = label_for(locale)
            if label not in LANGUAGES: continue
            try:
                pairs = mo_messages(data, name)
            except DataError as e:
                print(f"language-id: skipped {e}", file=sys.stderr)
                continue
            for msgid, msgstr in pairs:
                en = cleaned.get(msgid)
                if en is None:
                    en = cleaned[msgid] = clean(msgid)
                    if letters(en) >= 2 and en not in english:
                        english.add(en)
                        yield source, cut(en), "en", "message"
                t = clean(msgstr)
                if letters(t) >= 2 and not left_in_english(t, en):
                    yield source, cut(t), script_label(label, t), "message"
        else:
            for en, translated in desktop_entries(data):
                en = clean(en)
                if letters(en) >= 2 and en not in english:
                    english.add(en)
                    yield source, en, "en", "desktop"
                for locale, t in sorted(translated.items()):
                    label, t = label_for(locale), clean(t)
                    if label in LANGUAGES and letters(t) >= 2 and not left_in_english(t, en):
                        yield source, cut(t), script_label(label, t), "desktop"


def catalogue_list(path, source):
    return list(catalogue_samples(path, source))


# --- build -----------------------------------------------------------------------------------------------------

def pinned_by(manifest):
    """The manifest's name as SOURCE records it: the committed one, or today's fallback (datasets/language-id.sh)."""
    if os.path.basename(manifest) == "language-id.manifest":
        return "datasets/language-id.manifest"
    return f"today's apt lists, {manifest}: the committed manifest's files were gone"


def build(manifest, files, out):
    rows = read_manifest(manifest)
    source_of = {}
    index = next(r for r in rows if r["kind"] == "index")
    with lzma.open(os.path.join(files, index["file"]), "rt", encoding="utf-8", errors="replace") as f:
        pkg = None
        for line in f:
            if line.startswith("Package: "): pkg = line[9:].strip()
            elif line.startswith("Source: ") and pkg: source_of[pkg] = line[8:].split()[0]
    translations = {}   # code → (path, "bz2" or "xz")
    for r in rows:
        if r["kind"] == "translation":
            code, compression = r["name"][len("Translation-"):].rsplit(".", 1)
            translations[code] = (os.path.join(files, r["file"]), compression)
    debs = [(os.path.join(files, r["file"]), source_of.get(r["name"], r["name"]))
            for r in rows if r["kind"] in ("deb", "cross")]
    cross_sources = {source_of.get(r["name"], r["name"]) for r in rows if r["kind"] == "cross"}
    with multiprocessing.Pool(os.cpu_count()) as pool:   # the .debs in parallel, in manifest order
        pending = pool.starmap_async(catalogue_list, debs)
        samples = list(description_samples(files, translations, source_of))
        for part_samples in pending.get():
            samples += part_samples

    # One label per text; the first source (sorted) keeps a repeated text.
    labels_of, first = defaultdict(set), {}
    for src, t, lab, kind in sorted(samples):
        labels_of[t].add(lab)
        first.setdefault((t, lab), (src, kind))
    by_label = defaultdict(lambda: defaultdict(list))   # label → source → [(kind, text)]
    for (t, lab), (src, kind) in first.items():
        if len(labels_of[t]) == 1: by_label[lab][src].append((kind, t))

    def part(src):
        if src in cross_sources: return "cross"
        h = int(sha("split:" + src)[:8], 16) / 16**8
        return "test" if h < 0.2 else "validation" if h < 0.3 else "train"

    written = {k: [] for k in ("train", "validation", "test", "cross")}
    report = []
    report += [f"{lab}\tnot in LANGUAGES" for lab in sorted(set(by_label) - LANGUAGES)]
    for lab in sorted(LANGUAGES):
        chosen = {k: [] for k in written}
        for src in sorted(by_label[lab], key=sha):
            for kind, t in sorted(by_label[lab][src], key=lambda e: sha(e[1])):
                chosen[part(src)].append((src, t, lab, kind))
        def capped(split):
            desc = [r for r in chosen[split] if r[3] in ("synopsis", "description", "fragment")]
            cat = [r for r in chosen[split] if r[3] not in ("synopsis", "description", "fragment")]
            return desc[:CAPS[split][0]] + cat[:CAPS[split][1]]
        train = capped("train")
        if len(train) < MIN_TRAIN:
            report.append(f"{lab}\tleft out ({len(train)} training texts)")
            continue
        kept = dict(train=train, validation=capped("validation"), test=capped("test"), cross=chosen["cross"][:500])
        for k, v in kept.items(): written[k] += v
        report.append(f"{lab}\t" + " ".join(f"{len(kept[k])} {k}" for k in written))

    for k, items in written.items():
        items.sort(key=lambda r: (r[2], r[0], r[3], r[1]))
        with open(os.path.join(out, k + ".csv"), "w", encoding="utf-8", newline="") as f:
            w = csv.writer(f, lineterminator="\n")
            w.writerow(["source", "text", "label", "kind"])
            w.writerows(items)
    labels = sorted({r[2] for r in written["train"]})
    with open(os.path.join(out, "SOURCE"), "w") as f:
        f.write(f"Debian bookworm, pinned ({pinned_by(manifest)}): {len(labels)} languages, "
                + ", ".join(f"{len(v)} {k}" for k, v in written.items()) + " texts\n")
        f.write("\n".join(report) + "\n")
    print(f"language-id: {len(labels)} languages ({', '.join(labels)}); "
          + ", ".join(f"{len(v)} {k}" for k, v in written.items()), file=sys.stderr)


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "pin":
        pin(sys.argv[2])
    elif len(sys.argv) == 5 and sys.argv[1] == "build":
        build(*sys.argv[2:])
    else:
        print(__doc__.split("\n\n")[0], file=sys.stderr)
        sys.exit(64)
