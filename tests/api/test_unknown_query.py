"""Unknown and repeated query parameters answer 422 naming them."""

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


@pytest.mark.parametrize(
    ("url", "name"),
    [
        ("/compare?gpu=nvidia-rtx-4090&gpu=nvidia-rtx-3090&workload=resnet50-train", "gpu"),
        ("/recommend?budget=800&budget=8000", "budget"),
        ("/rankings?workload=resnet50-train&workload=bert-base-squad-finetune", "workload"),
    ],
)
def test_a_one_value_parameter_given_twice_is_422_naming_it(client, url, name):
    answer = client.get(url)
    assert answer.status_code == 422
    (error,) = answer.json()["detail"]
    assert error["loc"] == ["query", name] and "2 times" in error["msg"]
    assert error["type"] == "repeated_parameter"
