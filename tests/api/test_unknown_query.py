"""Unknown query parameters answer 422 naming them."""

import pytest


@pytest.mark.parametrize(
    ("url", "name"),
    [
        ("/recommend?budget=800&vram=24", "vram"),
        ("/rankings?sort=performance&colour=red", "colour"),
        ("/gpus?vendor=nvidia&page=2", "page"),
        ("/gpus/nvidia-rtx-4090?x=1", "x"),
        ("/workloads?limit=3", "limit"),
    ],
)
def test_unknown_query_parameter_is_422_naming_it(client, url, name):
    answer = client.get(url)
    assert answer.status_code == 422
    (error,) = answer.json()["detail"]
    assert error["loc"] == ["query", name]
    assert error["type"] == "unknown_parameter"


def test_known_parameters_still_answer(client):
    assert client.get("/recommend?budget=800&min_memory_gb=24&limit=3").status_code == 200
    assert client.get("/rankings?sort=performance&min_memory_gb=8").status_code == 200
    assert client.get("/gpus?vendor=nvidia&limit=5").status_code == 200
