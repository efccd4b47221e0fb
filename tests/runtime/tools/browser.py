"""A real browser for the tests that open our SVG and HTML pages: headless
Chromium (Debian's `chromium` package), driven through the Chrome DevTools
Protocol (CDP) over --remote-debugging-pipe (fd 3 carries our commands to
Chromium, fd 4 its replies and events; each message is JSON ended by a NUL
byte).

A test drives a page only as a person does: it moves the mouse, clicks,
presses keys and answers the page's prompts, all as real input events
(Input.dispatchMouseEvent, Input.dispatchKeyEvent, Page.handleJavaScriptDialog);
and it reads what the page shows (text, attributes, boxes of elements).

Reads run in an isolated JavaScript world (Page.createIsolatedWorld): it
sees the same document, but none of the page's own script (its globals, its
functions, the properties it sets on elements). A read can't call the page's
code, so a test can't prepare a page in a way a person couldn't. Reads must
not change the document either: no events dispatched from script, no
.click(), no assignments (read() refuses the obvious ones).

    with browser.Page() as page:
        page.open(path)                 # a fresh page each time
        x, y = page.centre("#fg-reset")
        page.click(x, y)
        page.wait_for("document.querySelector('#fg-reset').style.display === 'none'", "reset hidden")
        page.screenshot("shot.png")

Every wait is on a condition, with TIMEOUT as its limit, far above what any
machine needs; Chromium is closed (and killed by its PID if it lingers) when
the `with` block ends, whatever happened in it."""
import atexit
import base64
import fcntl
import json
import os
import re
import select
import shutil
import subprocess
import tempfile
import time

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")

# The limit of every wait (seconds): the page loads, events are handled and
# Chromium starts in well under a second; this only ends a hung wait.
TIMEOUT = 60

# What a read must not do: call into the page or change it.
FORBIDDEN = re.compile(r"window\.flamegraph|\bfg\.|dispatchEvent|\.click\s*\(|\.focus\s*\(|new\s+\w*Event\b|"
                       r"setAttribute|removeAttribute|textContent\s*=[^=]|innerHTML\s*=[^=]|\bstyle\.\w+\s*=[^=]")

# Keys by their DOM name: (code, Windows virtual key code).
KEYS = {"Escape": ("Escape", 27), "Enter": ("Enter", 13), "Tab": ("Tab", 9)}
MODIFIERS = {"alt": 1, "ctrl": 2, "meta": 4, "shift": 8}


class BrowserError(AssertionError):
    """Chromium failed or a wait ran out: fails the test that waited."""


class Page:
    """One headless Chromium with one tab, `width` x `height` CSS pixels."""

    def __init__(self, width=1400, height=900):
        if not CHROMIUM:
            raise BrowserError("chromium is not installed")
        self.width, self.height = width, height
        self.dialogs = []      # (type, message) of every dialog the page opened
        self.errors = []       # uncaught exceptions of the page's script
        self._answers = []     # texts for the next prompts, in order
        self._events = []      # events not yet waited for: (method, params)
        self._replies = {}     # id -> reply
        self._next_id = 0
        self._buf = b""
        self._session = None
        self._context = None   # the isolated world of the current document
        self._mouse = (0, 0)
        self._profile = tempfile.TemporaryDirectory(prefix="bpfscope-chromium-")
        self._log = open(os.path.join(self._profile.name, "chromium.log"), "w+b")
        # The pipes, moved above the fds the child will use (3 and 4).
        to_chrome_r, to_chrome_w = os.pipe()
        from_chrome_r, from_chrome_w = os.pipe()
        fds = [fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10) for fd in (to_chrome_r, from_chrome_w)]
        for fd in (to_chrome_r, from_chrome_w):
            os.close(fd)
        self._out, self._in = to_chrome_w, from_chrome_r

        def child_fds():  # in the child, before exec: fd 3 and fd 4 (dup2 clears close-on-exec)
            os.dup2(fds[0], 3)
            os.dup2(fds[1], 4)

        argv = [CHROMIUM, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
                "--no-default-browser-check", "--disable-extensions", "--disable-background-networking",
                "--disable-sync", "--mute-audio", "--hide-scrollbars", "--remote-debugging-pipe",
                "--user-data-dir=" + self._profile.name, "--window-size=%d,%d" % (width, height), "about:blank"]
        try:
            self._proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=self._log, stderr=self._log,
                                          close_fds=False, preexec_fn=child_fds)
        except BaseException:
            for fd in (self._out, self._in):
                os.close(fd)
            self._log.close()
            self._profile.cleanup()
            raise
        finally:
            for fd in fds:
                os.close(fd)
        atexit.register(self.close)
        try:
            target = self.call("Target.createTarget", {"url": "about:blank"}, session=False)["targetId"]
            self._session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True},
                                      session=False)["sessionId"]
            self.call("Page.enable")
            self.call("Runtime.enable")
            self.call("Emulation.setFocusEmulationEnabled", {"enabled": True})
            self._viewport(width, height)
        except BaseException:
            self.close()
            raise

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # The protocol.

    def _send(self, method, params, session):
        self._next_id += 1
        msg = {"id": self._next_id, "method": method, "params": params or {}}
        if session and self._session:
            msg["sessionId"] = self._session
        data = json.dumps(msg).encode() + b"\0"
        while data:
            data = data[os.write(self._out, data):]
        return self._next_id

    def _receive(self, deadline, what):
        """Reads what Chromium has sent, waiting for it until `deadline`;
        answers dialogs as they open."""
        left = deadline - time.monotonic()
        if left <= 0:
            raise BrowserError("timed out after %d s waiting for %s%s" % (TIMEOUT, what, self._diagnosis()))
        ready, _, _ = select.select([self._in], [], [], left)
        if not ready:
            return
        chunk = os.read(self._in, 1 << 20)
        if not chunk:
            raise BrowserError("chromium exited while waiting for %s%s" % (what, self._diagnosis()))
        self._buf += chunk
        *messages, self._buf = self._buf.split(b"\0")
        for raw in messages:
            msg = json.loads(raw)
            if "id" in msg:
                self._replies[msg["id"]] = msg
                continue
            method, params = msg.get("method"), msg.get("params", {})
            if method == "Page.javascriptDialogOpening":
                self._dialog(params)
            elif method == "Runtime.exceptionThrown":
                d = params["exceptionDetails"]
                self.errors.append(d.get("exception", {}).get("description") or d.get("text"))
            self._events.append((method, params))

    def _dialog(self, params):
        """A person reading the dialog: types the answer the test gave for
        a prompt, else dismisses it (the test sees it in `dialogs`)."""
        self.dialogs.append((params["type"], params["message"]))
        reply = {"accept": False}
        if params["type"] == "prompt" and self._answers:
            reply = {"accept": True, "promptText": self._answers.pop(0)}
        self._send("Page.handleJavaScriptDialog", reply, session=True)

    def _diagnosis(self):
        self._log.flush()
        self._log.seek(0)
        # Its last lines, without the noise of a machine with no D-Bus.
        lines = [l for l in self._log.read().decode(errors="replace").splitlines() if "dbus" not in l.lower()]
        return "\npage errors: %s\nchromium log (end):\n%s" % (self.errors, "\n".join(lines[-10:]))

    def call(self, method, params=None, session=True):
        """Sends a command and returns its result."""
        if self._proc.poll() is not None:
            raise BrowserError("chromium has exited (%s)%s" % (self._proc.returncode, self._diagnosis()))
        i = self._send(method, params, session)
        deadline = time.monotonic() + TIMEOUT
        while i not in self._replies:
            self._receive(deadline, method)
        reply = self._replies.pop(i)
        if "error" in reply:
            raise BrowserError("%s: %s" % (method, reply["error"]))
        return reply.get("result", {})

    def _event(self, method, deadline):
        """Waits for the next `method` event (earlier ones forgotten)."""
        while True:
            for k, (m, params) in enumerate(self._events):
                if m == method:
                    del self._events[:k + 1]
                    return params
            self._receive(deadline, method)

    def _viewport(self, width, height):
        self.call("Emulation.setDeviceMetricsOverride",
                  {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False})
        self.width, self.height = width, height

    # Opening a page.

    def open(self, path_or_url, fit=True):
        """Loads the page fresh (its script starts over) and waits until it
        has loaded. With `fit`, the window grows to show the whole page
        when it is larger (as a person would make it)."""
        url = path_or_url if "://" in path_or_url else "file://" + os.path.abspath(path_or_url)
        if self._mouse != (0, 0):
            self.hover(0, 0)  # the mouse off to the corner: nothing of the new page under it
        self._events.clear()
        self.errors.clear()
        self.dialogs.clear()
        self._context = None
        deadline = time.monotonic() + TIMEOUT
        nav = self.call("Page.navigate", {"url": url})
        if nav.get("errorText"):
            raise BrowserError("cannot open %s: %s" % (url, nav["errorText"]))
        self._event("Page.loadEventFired", deadline)
        frame = self.call("Page.getFrameTree")["frameTree"]["frame"]
        if frame.get("loaderId") != nav.get("loaderId"):
            raise BrowserError("loaded %s, not the document of %s" % (frame.get("url"), url))
        self._context = self.call("Page.createIsolatedWorld", {"frameId": frame["id"], "worldName": "test-reader"})[
            "executionContextId"]
        self.wait_for("document.readyState === 'complete'", "the page to be complete")
        if fit:
            w, h = self._size()
            if w > self.width or h > self.height:
                self._viewport(max(w, self.width), max(h, self.height))

    def _size(self):
        """The page's width and height, CSS pixels: an SVG document's own
        size, an HTML one's scrolling size."""
        return self.read("(function () { var e = document.documentElement, r = e.getBoundingClientRect();"
                         " return e instanceof SVGElement ? [Math.ceil(r.width), Math.ceil(r.height)]"
                         " : [e.scrollWidth, e.scrollHeight]; })()")

    # Reading what the page shows.

    def read(self, expression):
        """The value of a JavaScript expression that reads the document
        (querySelector, textContent, getAttribute, getBoundingClientRect,
        style...), evaluated in the isolated world: JSON-able values only."""
        if FORBIDDEN.search(expression):
            raise BrowserError("a read must not call the page's script or change the page: " + expression)
        if self._context is None:
            raise BrowserError("no page open")
        r = self.call("Runtime.evaluate", {"expression": expression, "contextId": self._context,
                                           "returnByValue": True})
        if "exceptionDetails" in r:
            d = r["exceptionDetails"]
            raise BrowserError("read %r: %s" % (expression, d.get("exception", {}).get("description") or d["text"]))
        return r["result"].get("value")

    def wait_for(self, expression, what):
        """Reads `expression` until it is truthy and returns it; fails the
        test after TIMEOUT."""
        deadline = time.monotonic() + TIMEOUT
        while True:
            value = self.read(expression)
            if value:
                return value
            # Poll again soon, or as soon as Chromium says something.
            if time.monotonic() > deadline:
                raise BrowserError("timed out after %d s waiting for %s (%s)%s"
                                   % (TIMEOUT, what, expression, self._diagnosis()))
            ready, _, _ = select.select([self._in], [], [], 0.02)
            if ready:
                self._receive(deadline, what)

    def text(self, selector):
        """The text of the first element matching `selector` ("" if none)."""
        return self.read("(function (e) { return e ? e.textContent : ''; })(document.querySelector(%s))"
                         % json.dumps(selector))

    def attr(self, selector, name):
        return self.read("(function (e) { return e ? e.getAttribute(%s) : null; })(document.querySelector(%s))"
                         % (json.dumps(name), json.dumps(selector)))

    def shown(self, selector):
        """Whether the element and its ancestors are displayed."""
        return self.read("(function (e) { for (; e && e.style; e = e.parentNode)"
                         " if (getComputedStyle(e).display === 'none') return false; return !!e; })"
                         "(document.querySelector(%s))" % json.dumps(selector))

    def box(self, selector):
        """The element's bounding box in the window: {x, y, width, height}."""
        b = self.read("(function (e) { if (!e) return null; var r = e.getBoundingClientRect();"
                      " return {x: r.x, y: r.y, width: r.width, height: r.height}; })(document.querySelector(%s))"
                      % json.dumps(selector))
        if b is None:
            raise BrowserError("no element %s on the page" % selector)
        return b

    def centre(self, selector):
        b = self.box(selector)
        return b["x"] + b["width"] / 2, b["y"] + b["height"] / 2

    # Acting as a person.

    def _at(self, x, y):
        if not (0 <= x < self.width and 0 <= y < self.height):
            raise BrowserError("(%.1f, %.1f) is outside the %dx%d window" % (x, y, self.width, self.height))

    def hover(self, x, y):
        """Moves the mouse to (x, y), CSS pixels from the window's top left."""
        self._at(x, y)
        self.call("Input.dispatchMouseEvent", {"type": "mouseMoved", "x": x, "y": y, "button": "none"})
        self._mouse = (x, y)

    def click(self, x, y):
        """Moves the mouse to (x, y) and clicks the left button there."""
        self.hover(x, y)
        for kind in ("mousePressed", "mouseReleased"):
            self.call("Input.dispatchMouseEvent", {"type": kind, "x": x, "y": y, "button": "left", "buttons":
                                                   1 if kind == "mousePressed" else 0, "clickCount": 1})

    def key(self, key, ctrl=False, shift=False, alt=False, meta=False):
        """Presses and releases a key: a character ("f") or a key's DOM name
        ("Escape"), with modifiers held."""
        mods = sum(MODIFIERS[m] for m, held in (("ctrl", ctrl), ("shift", shift), ("alt", alt), ("meta", meta))
                   if held)
        if len(key) == 1:
            code, vk = ("Key" + key.upper(), ord(key.upper())) if key.isalpha() else ("", ord(key))
            if key.isdigit():
                code = "Digit" + key
        else:
            code, vk = KEYS[key]
        down = {"type": "rawKeyDown", "modifiers": mods, "key": key, "code": code,
                "windowsVirtualKeyCode": vk, "nativeVirtualKeyCode": vk}
        if len(key) == 1 and not (mods & ~MODIFIERS["shift"]):
            down.update(type="keyDown", text=key, unmodifiedText=key)  # a typed character
        self.call("Input.dispatchKeyEvent", down)
        self.call("Input.dispatchKeyEvent", {"type": "keyUp", "modifiers": mods, "key": key, "code": code,
                                             "windowsVirtualKeyCode": vk, "nativeVirtualKeyCode": vk})

    def answer_prompt(self, text):
        """The text to type into the page's next window.prompt (then OK)."""
        self._answers.append(text)

    def screenshot(self, png_path):
        """Saves what the window shows of the page as a PNG (the window's
        empty space right of and below the page left out)."""
        w, h = self._size()
        clip = {"x": 0, "y": 0, "width": min(w, self.width), "height": min(h, self.height), "scale": 1}
        r = self.call("Page.captureScreenshot", {"format": "png", "clip": clip})
        with open(png_path, "wb") as f:
            f.write(base64.b64decode(r["data"]))

    # Closing.

    def close(self):
        """Closes Chromium: Browser.close, then a kill of its PID if it
        has not gone (its helper processes end with it); idempotent."""
        proc = getattr(self, "_proc", None)
        if proc is None:
            return
        self._proc = None
        atexit.unregister(self.close)
        try:
            if proc.poll() is None:
                try:
                    self._send("Browser.close", {}, session=False)
                except OSError:
                    pass
                try:
                    proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
        finally:
            for fd in (self._out, self._in):
                os.close(fd)
            self._log.close()
            self._profile.cleanup()


def screenshot(path, png_path, width=1400, height=900):
    """Opens a page (an SVG or HTML file) and saves it as a PNG."""
    with Page(width, height) as page:
        page.open(path)
        page.screenshot(png_path)
    if not os.path.getsize(png_path) > 1000:
        raise BrowserError("an empty screenshot: " + png_path)
