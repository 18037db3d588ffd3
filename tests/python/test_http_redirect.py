"""onset.open("http://HOST:PORT") sends its token only where it was pointed: a server that
redirects gets an error back, and the redirect's target never sees a request, let alone the
token. Two local servers on loopback: the first answers every request with a 302 to the second."""

import http.server
import threading

import pytest

TOKEN = "redirect-test-token-0123456789abcdef"


class _Recorder(http.server.BaseHTTPRequestHandler):
    """Records each request's path and headers on its server, and answers as the server says."""

    def do_GET(self):
        self.server.requests.append((self.path, dict(self.headers.items())))
        if self.server.redirect_to:
            self.send_response(302)
            self.send_header("Location", self.server.redirect_to + self.path)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        body = b'{"studies": []}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format, *args):
        pass


class _Server:
    """A threaded HTTP server on 127.0.0.1 and a free port, serving until the block ends."""

    def __init__(self, redirect_to=None):
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
        self.httpd.requests = []
        self.httpd.redirect_to = redirect_to
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def requests(self):
        return self.httpd.requests

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join()


def test_a_redirect_is_refused_and_the_token_stays_home():
    from onset.results.http_source import HttpSource

    with _Server() as elsewhere, _Server(redirect_to=elsewhere.url) as pointed:
        source = HttpSource(pointed.url, TOKEN, timeout=10)
        error = None
        try:
            source.studies()
        except RuntimeError as e:
            error = e
        # The request went where the user pointed, with the token...
        assert [path for path, _ in pointed.requests] == ["/api/studies"]
        assert pointed.requests[0][1].get("Authorization") == f"Bearer {TOKEN}"
        # ...and nowhere else: the redirect's target saw no token, indeed no request at all.
        assert [h for _, h in elsewhere.requests if "Authorization" in h] == []
        assert elsewhere.requests == []
    from onset.results.http_source import RedirectRefused

    assert isinstance(error, RedirectRefused), error
    message = str(error)
    assert "HTTP 302" in message
    assert f"{elsewhere.url}/api/studies" in message
    assert "token was not sent there" in message
    assert error.location == f"{elsewhere.url}/api/studies"


def test_the_same_server_without_a_redirect_answers():
    from onset.results.http_source import HttpSource

    with _Server() as server:
        assert HttpSource(server.url, TOKEN, timeout=10).studies() == []
        assert server.requests[0][1].get("Authorization") == f"Bearer {TOKEN}"


def test_onset_open_refuses_the_redirect_too():
    import onset

    pytest.importorskip("pandas")
    with _Server() as elsewhere, _Server(redirect_to=elsewhere.url) as pointed:
        with pytest.raises(RuntimeError, match="redirect was not followed"):
            onset.open(pointed.url, token=TOKEN).studies()
        assert elsewhere.requests == []
