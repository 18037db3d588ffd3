"""onset.open on a coordinator's HTTP API (`onset dashboard`, onsetd --http): the same cells and
points as the database gives, the token in a header, and compare through the API or the CLI."""

import urllib.request

import pytest

import servers
import tiny_study
from conftest import binary

STUDY = tiny_study.NAME


@pytest.fixture(scope="module")
def api_url(pandas, study_data, onset_cli):
    with servers.dashboard(onset_cli, study_data) as url:
        yield url


@pytest.fixture(scope="module")
def token_file(api_url, study_data):
    return f"{study_data}/onsetd.token"


def test_same_frames_as_the_database(pandas, api_url, token_file, study_data):
    import onset

    with onset.open(api_url, token_file=token_file) as api, onset.open(study_data) as database:
        pandas.testing.assert_frame_equal(api.cells(STUDY), database.cells(STUDY))
        columns = [c for c in database.metrics(STUDY).columns
                   if c not in ("at_unix_ms", "wall_time")]
        pandas.testing.assert_frame_equal(api.metrics(STUDY)[columns],
                                          database.metrics(STUDY)[columns])
        some = api.metrics(STUDY, names=["train/loss"], cells=[api.cells(STUDY).cell_id[0][:8]])
        expected = database.metrics(STUDY, names=["train/loss"],
                                    cells=[database.cells(STUDY).cell_id[0]])
        pandas.testing.assert_frame_equal(some[columns], expected[columns])
        assert api.metric_names(STUDY) == database.metric_names(STUDY)
        assert api.studies()["name"].tolist() == [STUDY]
        pandas.testing.assert_frame_equal(api.studies().drop(columns="created"),
                                          database.studies().drop(columns="created"))


def test_token_travels_in_a_header(api_url, token_file, monkeypatch):
    import onset

    token = open(token_file).read().strip()
    seen = []
    real_open = urllib.request.OpenerDirector.open

    def spy(opener, request, *args, **kwargs):
        seen.append(request)
        return real_open(opener, request, *args, **kwargs)

    monkeypatch.setattr(urllib.request.OpenerDirector, "open", spy)
    onset.open(api_url, token=token).cells(STUDY)
    assert seen
    for request in seen:
        assert token not in request.full_url
        assert request.get_header("Authorization") == f"Bearer {token}"


def test_wrong_token_and_unknown_study(api_url, token_file):
    import onset

    with pytest.raises(PermissionError, match="401"):
        onset.open(api_url, token="0" * 64).cells(STUDY)
    with pytest.raises(LookupError):
        onset.open(api_url, token_file=token_file).cells("absent")


def test_no_token(api_url, monkeypatch):
    import onset

    monkeypatch.delenv("ONSET_TOKEN", raising=False)
    monkeypatch.delenv("ONSET_TOKEN_FILE", raising=False)
    with pytest.raises(ValueError, match="token"):
        onset.open(api_url)


def test_compare_through_the_api_equals_the_cli(pandas, api_url, token_file, study_data,
                                                 onset_cli):
    import onset

    query = dict(metric="eval/heldout_loss", threshold=5.3, by=["arch"], baseline="arch=full")
    through_api = onset.open(api_url, token_file=token_file).compare(STUDY, **query)
    through_cli = onset.open(study_data, onset_bin=onset_cli).compare(STUDY, **query)
    assert through_api == through_cli
    assert through_cli["by"] == ["arch"] and len(through_cli["groups"]) == 2


def test_coordinator(pandas, study_data, onset_cli, tmp_path):
    """onsetd serving a copy of the study: the API for the frames, its gRPC address for the CLI's
    compare (--coordinator, the token by file)."""
    import onset

    onsetd = binary("onsetd")
    database = servers.copy_database(study_data, str(tmp_path / "coordinator"))
    with servers.coordinator(onsetd, database) as (grpc, http, token_file):
        results = onset.open(http, token_file=token_file, coordinator=grpc, onset_bin=onset_cli)
        local = onset.open(study_data, onset_bin=onset_cli)
        pandas.testing.assert_frame_equal(results.cells(STUDY), local.cells(STUDY))
        query = dict(metric="eval/heldout_loss", threshold=5.3, x="flops")
        assert results.compare(STUDY, **query) == local.compare(STUDY, **query)
        # The token itself, handed to the CLI in its environment.
        token = open(token_file).read().strip()
        by_token = onset.open(http, token=token, coordinator=grpc, onset_bin=onset_cli)
        assert by_token.compare(STUDY, **query) == local.compare(STUDY, **query)


def test_studies_follow_the_pages():
    """The API lists studies a page at a time (/api/studies?page_token=): every page is read."""
    from onset.results.http_source import HttpSource

    pages = {"": {"studies": [{"name": "a"}, {"name": "b"}], "next_page_token": "2",
                  "omitted": 1},
             "2": {"studies": [{"name": "c", "tags": ["x"]}], "next_page_token": "",
                   "omitted": 0}}
    asked = []

    class Paged(HttpSource):
        def get(self, path, query=None):
            assert path == "/api/studies"
            token = (query or {}).get("page_token", "")
            asked.append(token)
            return pages[token]

    studies = Paged("http://127.0.0.1:1", "token").studies()
    assert [s["name"] for s in studies] == ["a", "b", "c"]
    assert studies[2]["tags"] == ["x"]
    assert asked == ["", "2"]
