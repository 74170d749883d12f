"""Headless Chromium driven over the DevTools protocol (CDP): open a page, wait for it, check it, screenshot it.

Written by hand because the usual drivers cannot be used here: Playwright and pyppeteer download their own browser
builds at install time (blocked), selenium needs a chromedriver binary that Debian ships in the same `chromium-driver`
as nothing else needs. Debian's `chromium` plus the DevTools websocket (``websockets``, already a dependency of
Prefect) is all it takes: a page session, ``Runtime.evaluate`` for checks, ``Page.captureScreenshot``, and the
console, uncaught exceptions and failed loads collected as ``errors``.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path


def chromium_binary() -> str | None:
    return next((b for b in ("chromium", "chromium-browser", "google-chrome") if shutil.which(b)), None)


class Browser:
    """One headless Chromium with one page; use as a context manager."""

    def __init__(self, width: int = 1280, height: int = 800):
        self.width, self.height = width, height
        self.errors: list[str] = []
        self._id = 0

    def __enter__(self) -> Browser:
        from websockets.sync.client import connect

        binary = chromium_binary()
        if binary is None:
            raise FileNotFoundError("chromium not found (make test installs Debian's chromium package)")
        self._profile = tempfile.TemporaryDirectory(prefix="cdp-")
        self._proc = subprocess.Popen(
            [
                binary,
                "--headless=new",
                "--no-sandbox",  # root in a container: Chromium's own sandbox needs user namespaces it may not get
                "--disable-gpu",
                "--disable-dev-shm-usage",
                "--no-first-run",
                "--no-default-browser-check",
                "--disable-extensions",
                "--disable-background-networking",
                "--disable-component-update",
                # keep sandboxed iframes (MLflow's HTML artifact view) in the page's process, where CDP reaches them
                "--disable-site-isolation-trials",
                "--disable-features=IsolateSandboxedIframes,site-per-process",
                f"--user-data-dir={self._profile.name}",
                "--remote-debugging-port=0",
                f"--window-size={self.width},{self.height}",
                "about:blank",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,  # its own process group: __exit__ ends the helper processes with it
        )
        port_file = Path(self._profile.name) / "DevToolsActivePort"
        deadline = time.monotonic() + 60
        while not (port_file.is_file() and port_file.read_text().strip()):
            if time.monotonic() > deadline or self._proc.poll() is not None:
                raise RuntimeError(f"{binary} did not open its DevTools port")
            time.sleep(0.1)
        port = int(port_file.read_text().split()[0])
        targets = json.load(urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list"))
        page = next(t for t in targets if t["type"] == "page")
        self._ws = connect(page["webSocketDebuggerUrl"], max_size=None, open_timeout=30)
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.send(f"{domain}.enable")
        self.send(
            "Emulation.setDeviceMetricsOverride",
            width=self.width,
            height=self.height,
            deviceScaleFactor=1,
            mobile=False,
        )
        return self

    def __exit__(self, *exc) -> None:
        try:
            self._ws.close()
        finally:
            self._signal_group(signal.SIGTERM)
            try:
                self._proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
            self._signal_group(signal.SIGKILL)  # helpers (renderer, GPU, crashpad) that outlived the browser
            self._remove_profile()

    def _signal_group(self, sig: int) -> None:
        try:
            os.killpg(self._proc.pid, sig)
        except ProcessLookupError:  # the group is gone already
            pass

    def _remove_profile(self, patience_s: float = 10) -> None:
        """Remove the profile directory, retrying while a helper process that is still exiting writes into it (its
        `Default` directory can gain files for a moment after the browser process has ended)."""
        deadline = time.monotonic() + patience_s
        while True:
            try:
                self._profile.cleanup()
                return
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)

    # ------------------------------------------------------------------------------------------------- protocol

    def send(self, method: str, timeout_s: float = 60, **params) -> dict:
        """Send one command and return its result; events that arrive meanwhile are recorded."""
        self._id += 1
        self._ws.send(json.dumps({"id": self._id, "method": method, "params": params}))
        deadline = time.monotonic() + timeout_s
        while True:
            msg = json.loads(self._ws.recv(timeout=max(0.1, deadline - time.monotonic())))
            if msg.get("id") == self._id:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg.get("result", {})
            self._event(msg)

    def _event(self, msg: dict) -> None:
        method, params = msg.get("method"), msg.get("params", {})
        if method == "Runtime.exceptionThrown":
            d = params["exceptionDetails"]
            self.errors.append(f"uncaught: {d.get('exception', {}).get('description') or d.get('text')}")
        elif method == "Runtime.consoleAPICalled" and params.get("type") == "error":
            args = [a.get("value") if a.get("value") is not None else a.get("description", "") for a in params["args"]]
            self.errors.append("console.error: " + " ".join(str(a) for a in args))
        elif method == "Log.entryAdded" and params["entry"]["level"] == "error":
            self.errors.append(f"{params['entry']['text']} {params['entry'].get('url', '')}".strip())

    def pump(self, seconds: float) -> None:
        """Let the page run for ``seconds``, recording its events."""
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0:
            try:
                self._event(json.loads(self._ws.recv(timeout=left)))
            except TimeoutError:
                return

    def evaluate(self, js: str):
        """The value of a JavaScript expression in the page (awaited if it is a promise)."""
        res = self.send("Runtime.evaluate", expression=js, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in res:
            raise RuntimeError(f"{js[:80]}...: {res['exceptionDetails'].get('text')}")
        return res["result"].get("value")

    # ---------------------------------------------------------------------------------------------------- pages

    def open(self, url: str, ready_js: str, timeout_s: float = 120, settle_s: float = 1.5):
        """Navigate to ``url`` and wait until ``ready_js`` is truthy (then ``settle_s`` more, so late errors and
        images arrive); returns its value. Fails with the page's text if it never gets ready."""
        self.errors.clear()
        self.send("Page.navigate", url=url)
        deadline = time.monotonic() + timeout_s
        value = None
        while time.monotonic() < deadline:
            self.pump(0.5)
            try:
                value = self.evaluate(ready_js)
            except RuntimeError:
                value = None
            if value:
                self.pump(settle_s)
                return value
        text = self.evaluate("document.body ? document.body.innerText.slice(0, 1500) : ''")
        raise AssertionError(f"{url}: not ready after {timeout_s} s ({ready_js}); errors {self.errors}; page:\n{text}")

    def evaluate_in_frames(self, js: str) -> list:
        """The value of ``js`` in each child frame of the page (an isolated world: the frame's DOM, not its
        scripts), e.g. an iframe that the page's own origin may not read."""
        values = []
        todo = list(self.send("Page.getFrameTree")["frameTree"].get("childFrames", []))
        while todo:
            node = todo.pop()
            todo.extend(node.get("childFrames", []))
            ctx = self.send("Page.createIsolatedWorld", frameId=node["frame"]["id"])["executionContextId"]
            res = self.send("Runtime.evaluate", expression=js, contextId=ctx, returnByValue=True, awaitPromise=True)
            values.append(res["result"].get("value"))
        return values

    def broken_images(self) -> list[str]:
        return self.evaluate(
            "[...document.images].filter(i => !i.complete || i.naturalWidth === 0).map(i => i.src.slice(0, 120))"
        )

    def text(self) -> str:
        return self.evaluate("document.body.innerText")

    def screenshot(self, path: Path, scale: float = 0.75) -> None:
        """A PNG of the viewport, scaled down (``scale``) to keep the file small."""
        clip = {"x": 0, "y": 0, "width": self.width, "height": self.height, "scale": scale}
        data = self.send("Page.captureScreenshot", format="png", clip=clip)["data"]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(data))
