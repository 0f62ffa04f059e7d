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


@pytest.mark.parametrize(
    ("url", "names"),
    [
        ("/recommend?budget=800&quant=q4_k_m", ["quant"]),
        ("/recommend?budget=800&context=8192&batch=4", ["context", "batch"]),
        ("/recommend?budget=800&task=lora&min_tokens_per_s=20", ["task", "min_tokens_per_s"]),
        ("/recommend?budget=800&model=llama-3-8b&workload=resnet50-train", ["workload"]),
        ("/recommend?budget=800&model=llama-3-8b&precision=fp16", ["precision"]),
        ("/rankings?workload=resnet50-train&max_gpus=2", ["max_gpus"]),
        ("/rankings?framework=jax&quant=q8_0", ["quant", "framework"]),
        ("/rankings?model=llama-3-8b&workload=llm-train", ["workload"]),
    ],
)
def test_a_parameter_the_ask_does_not_read_is_422_naming_it(client, url, names):
    """A workload ask reads no model parameters and a model= ask no workload or precision:
    silently ignoring them answered another question than the one asked."""
    answer = client.get(url)
    assert answer.status_code == 422
    errors = answer.json()["detail"]
    assert sorted(e["loc"][-1] for e in errors) == sorted(names)
    assert {e["type"] for e in errors} == {"not_applicable"}


def test_the_parameters_each_ask_reads_still_answer(client):
    assert client.get("/recommend?budget=2000&model=llama-3-8b&quant=q4_k_m&batch=2").is_success
    assert client.get("/recommend?budget=2000&workload=resnet50-train&precision=fp32").is_success
    assert client.get("/rankings?model=llama-3-8b&max_gpus=2&framework=pytorch").is_success


@pytest.mark.parametrize(
    ("workload", "precision", "allowed"),
    [
        ("resnet50-train", "q4_k_m", "fp32"),  # a weight format on a training workload
        ("llm-inference", "awq", "fp16"),
        ("llama-3-8b-q4_k_m-tg512", "fp16", "q4_k_m"),  # a workload that fixes its format
    ],
)
def test_a_precision_the_workload_cannot_run_at_is_422_with_the_ones_it_can(
    client, workload, precision, allowed
):
    for route, extra in (("/rankings", {}), ("/recommend", {"budget": 3000})):
        answer = client.get(route, params={"workload": workload, "precision": precision, **extra})
        assert answer.status_code == 422, route
        (error,) = answer.json()["detail"]
        assert error["loc"] == ["query", "precision"] and allowed in error["allowed"]
    own = client.get("/rankings", params={"workload": workload, "precision": allowed})
    assert own.status_code == 200


@pytest.mark.parametrize(
    ("name", "bad", "good"),
    [
        ("gpu", "nvidia-rtx-4091", "nvidia-rtx-4090"),
        ("workload", "resnet50-trian", "resnet50-train"),
    ],
)
def test_results_filtered_by_an_unknown_slug_is_422_with_suggestions(client, name, bad, good):
    """An empty page would read as 'nothing measured yet' for a typo."""
    answer = client.get("/results", params={name: bad})
    assert answer.status_code == 422
    (error,) = answer.json()["detail"]
    assert error["loc"] == ["query", name] and good in error["suggestions"]
    assert client.get("/results", params={name: good}).status_code == 200


@pytest.mark.parametrize(
    ("url", "name"),
    [
        ("/recommend?budget=800&min_memory_gb=nan", "min_memory_gb"),
        ("/rankings?min_memory_gb=nan", "min_memory_gb"),
        ("/gpus?min_memory_gb=inf", "min_memory_gb"),
        ("/recommend?budget=800&resale=nan", "resale"),
    ],
)
def test_a_non_finite_number_is_422_saying_so_not_out_of_range(client, url, name):
    (error,) = client.get(url).json()["detail"]
    assert error["loc"] == ["query", name] and error["type"] == "finite_number"


@pytest.mark.parametrize(
    ("url", "name"),
    [
        ("/recommend?budget=800&model=", "model"),
        ("/recommend?budget=800&workload=", "workload"),
        ("/recommend?budget=800&model=llama-3.1-8b&quant=", "quant"),
        ("/rankings?workload=", "workload"),
        ("/rankings?model=", "model"),
        ("/compare?gpu=nvidia-rtx-4090&workload=", "workload"),
        ("/memory?model=llama-3.1-8b&quant=", "quant"),
    ],
)
def test_an_empty_slug_is_422_naming_it_not_a_default_or_a_404(client, url, name):
    """`model=` answered 404 "unknown model ''"; `workload=` and `quant=` answered the default
    as if they were absent."""
    response = client.get(url)
    assert response.status_code == 422, response.text
    (error,) = response.json()["detail"]
    assert error["loc"] == ["query", name] and error["type"] == "string_too_short"


@pytest.mark.parametrize("url", ["/keys?x=1", "/hosts?x=1"])
def test_a_route_that_needs_a_key_answers_401_before_judging_its_query(client, url):
    """Who asks comes before what is asked: GET /keys?x=1 answered 422 to anyone."""
    response = client.get(url)
    assert response.status_code == 401, response.text
    assert response.headers["www-authenticate"].lower().startswith("bearer")
    public = client.get("/results?x=1")  # a public route still names the unknown parameter
    assert public.status_code == 422
