"""Results from a coordinator's JSON API over HTTP: onsetd's --http or `onset dashboard`.

Every request carries the coordinator's token as `Authorization: Bearer TOKEN`, never in the URL
(coordinator/dashboard/dashboard_api.cc), and goes only to the address the user gave: a redirect
is never followed (urllib would send the token on to wherever it points) but raises
RedirectRefused, naming where the server wanted the client to go. The API serves the studies a
page at a time (/api/studies), a study's cells a page at a time (/api/studies/STUDY), the metric
names (/api/studies/STUDY/metrics), one metric's curves at a time
(/api/studies/STUDY/curves?metric=M) and `onset compare`'s analysis
(/api/studies/STUDY/compare?metric=M&threshold=X). Its curves carry each point's wall-clock time
(`at_unix_ms` beside `tokens`; null where the time is not known).
"""

import contextlib
import json
import os
import ssl
import urllib.error
import urllib.parse
import urllib.request

from .cell import Cell, Point

PAGE_SIZE = 10000  # the most cells the API serves in one page
_STATE_PREFIX = "CELL_STATE_"


class RedirectRefused(RuntimeError):
    """The API answered with a redirect (3xx), which is not followed: the token goes only to the
    address the user named. `location` is where the server wanted the client to go."""

    def __init__(self, message, location):
        super().__init__(message)
        self.location = location


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    """Follows no redirect: the 3xx answer comes back as an HTTPError, before any request to
    the new address is made."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):
        return None


def read_token(token=None, token_file=None):
    """The coordinator's token: `token`, else the file `token_file`, else $ONSET_TOKEN, else the
    file named by $ONSET_TOKEN_FILE (as the onset CLI looks for it)."""
    if token:
        return token.strip()
    token_file = token_file or (None if os.environ.get("ONSET_TOKEN")
                                else os.environ.get("ONSET_TOKEN_FILE"))
    if token_file:
        with open(token_file) as f:
            return f.read().strip()
    if os.environ.get("ONSET_TOKEN"):
        return os.environ["ONSET_TOKEN"].strip()
    raise ValueError("the coordinator's API needs its token: pass token= or token_file= (e.g. "
                     "onset-data/onsetd.token), or set ONSET_TOKEN or ONSET_TOKEN_FILE")


def _cell(message):
    """A Cell from the API's JSON of a v1.Cell (int64 fields arrive as strings)."""
    state = message.get("state", "")
    if state.startswith(_STATE_PREFIX):
        state = state[len(_STATE_PREFIX):].lower()
    return Cell(cell_id=message["id"], axes=dict(message.get("axes", {})), state=state,
                role=message.get("role") or "cell",
                tokens_done=int(message.get("tokens_done", 0)),
                tokens_budget=int(message.get("tokens_budget", 0)))


class HttpSource:
    """The API at `url` (http://HOST:PORT or https://HOST:PORT), with the coordinator's token;
    `tls_ca`: a PEM file of the certificates to trust for https."""

    def __init__(self, url, token, tls_ca=None, timeout=60):
        self.url = url.rstrip("/")
        self._token = token
        self._timeout = timeout
        context = ssl.create_default_context(cafile=tls_ca) if tls_ca else None
        # urllib's default opener follows redirects with every header of the request, the
        # token included, to any host: this one follows none.
        self._opener = urllib.request.build_opener(_NoRedirects(),
                                                   urllib.request.HTTPSHandler(context=context))

    def __repr__(self):
        return f"HttpSource({self.url!r})"

    def close(self):
        """Nothing to release: every request is a connection of its own."""

    def snapshot(self):
        """Requests are answered one by one: there is no transaction to hold them together."""
        return contextlib.nullcontext()

    def get(self, path, query=None):
        """GET path (?query, a dict) -> the parsed JSON reply; LookupError on 404 (no such study),
        PermissionError on 401 and 403, RedirectRefused on a redirect (not followed: the token is
        not sent there), RuntimeError on any other error, with the server's message."""
        url = self.url + path
        if query:
            url += "?" + urllib.parse.urlencode(query)
        request = urllib.request.Request(url, headers={"Authorization": f"Bearer {self._token}",
                                                       "Accept": "application/json"})
        try:
            with self._opener.open(request, timeout=self._timeout) as reply:
                return json.load(reply)
        except urllib.error.HTTPError as e:
            if 300 <= e.code < 400:
                location = e.headers.get("Location", "") if e.headers else ""
                target = urllib.parse.urljoin(url, location) if location else "(no Location)"
                raise RedirectRefused(
                    f"{self.url}{path}: HTTP {e.code}: the server redirects to {target}; the "
                    "redirect was not followed and the token was not sent there (open the API "
                    "at the address it serves on)", target) from None
            try:
                message = json.load(e).get("error", "")
            except ValueError:
                message = ""
            message = f"{self.url}{path}: HTTP {e.code}: {message or e.reason}"
            if e.code == 404:
                raise LookupError(message) from None
            if e.code in (401, 403):
                raise PermissionError(message) from None
            raise RuntimeError(message) from None

    def _study_path(self, study, *rest):
        parts = ["api", "studies", study, *rest]
        return "/" + "/".join(urllib.parse.quote(p, safe="") for p in parts)

    def studies(self):
        """[{name, description, tags, source_name, created_unix_ms}] as the coordinator lists
        them."""
        studies, token = [], ""
        while True:
            reply = self.get("/api/studies", {"page_token": token} if token else None)
            studies += [{"name": s["name"], "description": s.get("description", ""),
                         "tags": list(s.get("tags", [])), "source_name": s.get("source_name", ""),
                         "created_unix_ms": int(s.get("created_unix_ms", 0))}
                        for s in reply.get("studies", [])]
            token = reply.get("next_page_token", "")
            if not token:
                return studies

    def cells(self, study):
        """The study's grid points in queue order (trunks left out), page by page."""
        cells, token = [], ""
        while True:
            query = {"page_size": PAGE_SIZE}
            if token:
                query["page_token"] = token
            reply = self.get(self._study_path(study), query)
            cells += [_cell(c) for c in reply.get("cells", []) if c.get("role") != "trunk"]
            token = reply.get("next_page_token", "")
            if not token:
                return cells

    def metric_names(self, study):
        """Every metric name the study's cells reported, sorted."""
        reply = self.get(self._study_path(study, "metrics"))
        return sorted(m["name"] for m in reply.get("metrics", []))

    def points(self, study, names=(), cell_ids=()):
        """The study's metric points (only `names` and `cell_ids` when given), a metric's curves
        per request, in the order of metric, cell, tokens."""
        names = sorted(names) if names else self.metric_names(study)
        points = []
        for name in names:
            query = {"metric": name}
            if cell_ids:
                query["cells"] = ",".join(cell_ids)
            reply = self.get(self._study_path(study, "curves"), query)
            for curve in reply.get("curves", []):
                times = curve.get("at_unix_ms") or [None] * len(curve["tokens"])
                for tokens, value, at in zip(curve["tokens"], curve["values"], times):
                    points.append(Point(curve["cell_id"], name, int(tokens), value,
                                        int(at) if at else None))
        return points

    def compare(self, study, query):
        """The API's compare: the same analysis and JSON as `onset compare --json`."""
        return self.get(self._study_path(study, "compare"), query)
