"""Reading apt's indexes for the dataset scripts (debian-descriptions.sh, language-id.sh)."""


def stanzas(path):
    """deb822 paragraphs as dicts; continuation lines (leading space) are kept with their field."""
    with open(path, encoding="utf-8", errors="replace") as f:
        fields, key = {}, None
        for line in f:
            line = line.rstrip("\n")
            if not line.strip():
                if fields: yield fields
                fields, key = {}, None
            elif line[0] in " \t" and key:
                fields[key] += "\n" + line
            elif ":" in line:
                key, _, value = line.partition(":")
                fields[key] = value.strip()
        if fields: yield fields


def long_text(value):
    """A Description field as text: the synopsis line, then the body (" ." lines become blank lines)."""
    lines = value.split("\n")
    body = [("" if l.strip() == "." else l[1:]) for l in lines[1:]]
    return "\n".join([lines[0].strip()] + body).strip()
