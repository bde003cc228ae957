#!/usr/bin/env python3
"""Drives `mltool studio` in headless Chromium over the DevTools protocol (Chromium's --remote-debugging-pipe: JSON
messages ending in NUL on file descriptors 3 and 4), with nothing but the standard library: no selenium, no driver,
no network. Used by StudioBrowserTests.

    drive_studio.py URL PHOTO SOURCE DOWNLOADS DETECT_SOURCE DETECT_PHOTO [SCREENSHOTS]

Opens URL (the address `mltool studio` printed), clicks the data source SOURCE, Train, waits for the run while
recording how many points the curve shows after each event, picks PHOTO in the preview, Quantize, compares the quantized
model with the trained one on PHOTO, Export ONNX and the download link (downloads go to DOWNLOADS, inside the
project). Prints one JSON object: the clicks, the curve's point counts as they changed, the predictions shown, the
quantization report's first line, the comparison (the compared model, its predictions and the open model's), the
exported file, then the text CSV trained (textRun, textCurve) and a sentence tried (textPredictions), then the detection data
DETECT_SOURCE opened (annotatedBoxes: the boxes its data view draws), trained with --augment none and --validation 0.2
(detectRun, detectCurve, detectLegend) and tried on DETECT_PHOTO (boxes: the prediction list's lines, one per box
drawn), and any error the page showed. SCREENSHOTS: a folder for one PNG per screen.
"""
import base64
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

CHROMIUM_FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--no-default-browser-check",
    # A closed network: nothing to fetch, no component updates, no sync, no crash reports.
    "--disable-background-networking", "--disable-component-update", "--disable-default-apps", "--disable-sync",
    "--disable-extensions", "--disable-breakpad", "--metrics-recording-only", "--password-store=basic",
    "--hide-scrollbars", "--window-size=1280,900", "--remote-debugging-pipe",
]


class Browser:
    def __init__(self, chromium, profile):
        to_chrome_r, self.to_chrome = os.pipe()
        self.from_chrome, from_chrome_w = os.pipe()
        # Chromium reads commands on fd 3 and writes answers on fd 4.
        def fds():
            os.dup2(to_chrome_r, 3)
            os.dup2(from_chrome_w, 4)
        self.proc = subprocess.Popen([chromium] + CHROMIUM_FLAGS + ["--user-data-dir=" + profile, "about:blank"],
                                     preexec_fn=fds, pass_fds=(3, 4),  # kept open after preexec_fn has set them
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self.buffer = b""
        self.next_id = 0
        self.session = None

    def send(self, method, params=None, session=True):
        self.next_id += 1
        message = {"id": self.next_id, "method": method, "params": params or {}}
        if session and self.session:
            message["sessionId"] = self.session
        os.write(self.to_chrome, json.dumps(message).encode() + b"\0")
        while True:
            reply = self.read()
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})

    def read(self):
        while b"\0" not in self.buffer:
            chunk = os.read(self.from_chrome, 1 << 16)
            if not chunk:
                raise RuntimeError("chromium closed its DevTools pipe")
            self.buffer += chunk
        message, self.buffer = self.buffer.split(b"\0", 1)
        return json.loads(message)

    def open(self, url):
        target = self.send("Target.createTarget", {"url": "about:blank"}, session=False)["targetId"]
        self.session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True}, session=False)["sessionId"]
        self.send("Page.enable")
        self.send("Runtime.enable")
        self.send("Page.navigate", {"url": url})

    def js(self, expression):
        r = self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True, "awaitPromise": True})
        if "exceptionDetails" in r:
            raise RuntimeError(f"{expression}: {r['exceptionDetails']}")
        return r.get("result", {}).get("value")

    def wait(self, expression, seconds=60, what=None):
        deadline = time.time() + seconds
        while time.time() < deadline:
            value = self.js(expression)
            if value:
                return value
            time.sleep(0.1)
        raise RuntimeError(f"timed out after {seconds} s waiting for {what or expression}; page error: {self.page_error()}")

    def page_error(self):
        return self.js("document.getElementById('error').hidden ? null : document.getElementById('error').textContent")

    def screenshot(self, folder, name):
        if folder:
            data = self.send("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True})["data"]
            with open(os.path.join(folder, f"studio-{name}.png"), "wb") as f:
                f.write(base64.b64decode(data))

    def close(self):
        try:
            self.send("Browser.close", session=False)
        except Exception:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def choose_file(b, selector, path):
    """Sets a file input as a person's choice would (one click on the file picker) and tells the page."""
    document = b.send("DOM.getDocument")["root"]["nodeId"]
    node = b.send("DOM.querySelector", {"nodeId": document, "selector": selector})["nodeId"]
    b.send("DOM.setFileInputFiles", {"nodeId": node, "files": [path]})
    b.js(f"document.querySelector({json.dumps(selector)}).dispatchEvent(new Event('change'))")


def detect(b, click, result, source, photo, shots):
    """The detection data: its annotated photos, a run with the curve watched, boxes on a photo it never saw."""
    click(f"#sources li[data-path={json.dumps(source)}]")
    b.wait(f"document.getElementById('data-title').textContent.startsWith({json.dumps(source)}) && "
           "document.querySelectorAll('#data-samples svg.annotated rect.box').length > 0 && "
           "!!document.querySelector('#train-fields input[name=\"--augment\"]')", what="the detection data view")
    result["annotatedBoxes"] = b.js("document.querySelectorAll('#data-samples svg.annotated rect.box').length")
    b.screenshot(shots, "detect-data")
    b.js("""(() => { const f = document.getElementById('train-fields');
        f.querySelector('input[name="--augment"]').value = 'none';
        f.querySelector('input[name="--validation"]').value = '0.2'; })()""")
    b.js("window.curveSeen = []")
    click("#train")
    b.wait(f"document.getElementById('run-title').textContent.includes({json.dumps(source + '.bin')}) && "
           "['finished', 'failed'].includes(document.getElementById('run-state').textContent)", seconds=240,
           what="the detector run")
    result["detectRun"] = b.js("document.getElementById('run-state').textContent")
    result["detectCurve"] = b.js("window.curveSeen")
    result["detectLegend"] = b.js("(document.querySelector('#run-curves text') || {}).textContent || ''")
    b.wait("!document.getElementById('model-pane').hidden && "
           f"document.getElementById('model-title').textContent.includes({json.dumps(source + '.bin')})", what="the detector")
    choose_file(b, "#photo", photo)
    result["clicks"] += 1
    b.wait("[...document.querySelectorAll('#predictions li')].some(li => /\\[\\d+, \\d+, \\d+, \\d+\\]$/.test(li.textContent))",
           what="the boxes")
    result["boxes"] = b.js("[...document.querySelectorAll('#predictions li')].map(li => li.textContent)")
    b.screenshot(shots, "detect")


def main():
    url, photo, source, downloads, detect_source, detect_photo = sys.argv[1:7]
    shots = sys.argv[7] if len(sys.argv) > 7 else None
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if not chromium:
        print(json.dumps({"missing": "chromium (apt-get install -y chromium)"}))
        return
    profile = tempfile.mkdtemp(prefix="mltool-studio-chromium-")
    result = {"clicks": 0, "curve": [], "predictions": [], "error": None}
    b = Browser(chromium, profile)
    try:
        b.open(url)
        b.send("Browser.setDownloadBehavior", {"behavior": "allow", "downloadPath": downloads}, session=False)

        def click(selector):
            b.wait(f"!!document.querySelector({json.dumps(selector)})", what=selector)
            b.js(f"document.querySelector({json.dumps(selector)}).click()")
            result["clicks"] += 1

        b.wait("document.querySelectorAll('#sources li').length > 0", what="the data sources")
        click(f"#sources li[data-path={json.dumps(source)}]")
        b.wait("document.querySelectorAll('#class-chart rect').length > 0 && document.querySelectorAll('#train-fields input').length > 0",
               what="the data view and the form")
        result["bars"] = b.js("document.querySelectorAll('#class-chart rect').length")
        b.screenshot(shots, "data")
        # The curve: its point count each time the page redraws it (a MutationObserver sees every redraw, also
        # those of events that arrive together), until the run ends.
        b.js("window.curveSeen = []; new MutationObserver(() => { const n = Number(document.getElementById('run-curves')"
             ".dataset.points || 0); if (n && curveSeen[curveSeen.length - 1] !== n) curveSeen.push(n); })"
             ".observe(document.getElementById('run-curves'), {attributes: true, childList: true})")
        click("#train")
        deadline = time.time() + 240
        while time.time() < deadline:
            result["curve"] = b.js("window.curveSeen")
            state = b.js("document.getElementById('run-state').textContent")
            if state in ("finished", "failed", "cancelled"):
                result["run"] = state
                result["curve"] = b.js("window.curveSeen")
                break
            time.sleep(0.05)
        b.screenshot(shots, "train")
        if result.get("run") != "finished":
            raise RuntimeError(f"the run ended as {result.get('run')}: {b.page_error()}")
        b.wait("!document.getElementById('model-pane').hidden", what="the model")
        # Choosing a photo is one click (the file picker).
        choose_file(b, "#photo", photo)
        result["clicks"] += 1
        b.wait("document.querySelectorAll('#predictions li').length > 0", what="the predictions")
        result["predictions"] = b.js("[...document.querySelectorAll('#predictions li')].map(li => li.textContent)")
        b.screenshot(shots, "preview")
        click("#quantize")
        b.wait("!document.getElementById('quantize-report').hidden", seconds=120, what="the quantization report")
        result["quantize"] = b.js("document.getElementById('quantize-report').textContent.split('\\n')[0]")
        b.screenshot(shots, "quantize")
        # Compare: the quantized model beside the trained one on the same photo (one choice in the list).
        b.wait("document.getElementById('compare').options.length > 1", what="a model to compare with")
        result["compared"] = b.js("(() => { const s = document.getElementById('compare'); s.value = s.options[1].value; "
                                  "s.dispatchEvent(new Event('change')); return s.value; })()")
        result["clicks"] += 1
        b.wait("!document.getElementById('compare-column').hidden && "
               "document.querySelectorAll('#compare-predictions li').length > 0", what="the compared predictions")
        result["comparison"] = b.js("[document.getElementById('compare-name').textContent, "
                                    "[...document.querySelectorAll('#compare-predictions li')].map(li => li.textContent), "
                                    "[...document.querySelectorAll('#predictions li')].map(li => li.textContent)]")
        b.screenshot(shots, "compare")
        click("#export-onnx")
        b.wait("!!document.getElementById('download-onnx')", seconds=60, what="the download link")
        result["exported"] = b.js("document.getElementById('downloads').textContent")
        click("#download-onnx")
        result["clicksToExport"] = result["clicks"]
        deadline = time.time() + 30
        while time.time() < deadline and not any(f.endswith(".onnx") for f in os.listdir(downloads)):
            time.sleep(0.1)
        result["downloaded"] = sorted(os.listdir(downloads))
        b.screenshot(shots, "export")
        # The text CSV: pick it, Train with the form's defaults, type a sentence, Try.
        click('#sources li[data-path="texts.csv"]')
        b.wait("document.getElementById('data-title').textContent.startsWith('texts.csv') && "
               "document.querySelectorAll('#train-fields input').length > 0", what="the text data view")
        b.js("window.curveSeen = []")
        click("#train")
        b.wait("document.getElementById('run-title').textContent.includes('texts.bin') && "
               "['finished', 'failed'].includes(document.getElementById('run-state').textContent)", seconds=120,
               what="the text run")
        result["textRun"] = b.js("document.getElementById('run-state').textContent")
        result["textCurve"] = b.js("window.curveSeen")
        b.wait("!document.getElementById('text-input').hidden", what="the sentence box")
        b.js("document.getElementById('sentence').value = 'a puzzle game with levels and high scores'")
        click("#try-text")
        b.wait("document.querySelectorAll('#predictions li').length > 0", what="the text prediction")
        result["textPredictions"] = b.js("[...document.querySelectorAll('#predictions li')].map(li => li.textContent)")
        b.screenshot(shots, "text")
        detect(b, click, result, detect_source, detect_photo, shots)
        result["error"] = b.page_error()
    except Exception as e:  # the test reports it with what was done so far
        result["error"] = str(e)
    finally:
        b.close()
        shutil.rmtree(profile, ignore_errors=True)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
