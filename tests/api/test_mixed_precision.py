"""A bf16 workload asked without precision= reads a GPU without bf16 units at fp16 (mixed
precision as training scripts run it: estimate.with_fp16_fallback), and says so; asked at
precision=bf16 it does not."""

from sqlmodel import Session, select

from service.models import Gpu
from service.read_model.snapshot import utc_today


def _items(client, **params) -> dict[str, dict]:
    response = client.get("/rankings", params={"sort": "performance", **params})
    assert response.status_code == 200, response.text
    return {i["gpu"]: i for i in response.json()["items"]}


def _without_bf16_units(db) -> set[str]:
    with Session(db) as s:
        return {g.slug for g in s.exec(select(Gpu)).all() if not g.bf16_tensor_tflops}


def test_default_llm_train_reads_gpus_without_bf16_units_at_fp16(db, client):
    default = _items(client, workload="llm-train")
    bf16 = _items(client, workload="llm-train", precision="bf16")
    fp16 = _items(client, workload="llm-train", precision="fp16")
    lacking = _without_bf16_units(db)
    assert {"nvidia-v100-sxm2-32gb", "nvidia-t4", "nvidia-rtx-2080-ti"} <= lacking
    marked = {slug for slug, item in default.items() if item["precision"] == "fp16"}
    assert {"nvidia-v100-sxm2-32gb", "nvidia-t4", "nvidia-rtx-2080-ti"} <= marked <= lacking
    for slug, item in default.items():
        if slug in marked:
            assert item["throughput"] == fp16[slug]["throughput"] > bf16[slug]["throughput"]
        else:
            assert item["precision"] is None
            assert item["throughput"] == bf16[slug]["throughput"]
    assert all(item["precision"] is None for item in bf16.values())
    # fp16 runs on a V100's tensor cores: above a GTX 1080 Ti, which has none
    assert (
        default["nvidia-v100-sxm2-32gb"]["throughput"] > default["nvidia-gtx-1080-ti"]["throughput"]
    )


def test_recommend_says_why_a_gpu_is_at_fp16(client, keys):
    body = {"gpu": "nvidia-v100-pcie-32gb", "usd": 1.0, "condition": "used", "source": "test"}
    body["observed_at"] = str(utc_today())
    assert client.post("/prices", json=body, headers=keys.auth(keys.admin)).status_code == 201
    ask = {"budget": 1, "workload": "llm-train", "condition": "used", "max_gpus": 1}
    rows = client.get("/recommend", params=ask).json()["recommendations"]
    assert [(r["gpu"], r["precision"]) for r in rows] == [("nvidia-v100-pcie-32gb", "fp16")]
    assert "at fp16: the catalog states no bf16 tensor rate for this GPU" in rows[0]["why"]
    strict = client.get("/recommend", params=ask | {"precision": "bf16"}).json()
    assert [(r["gpu"], r["precision"]) for r in strict["recommendations"]] == [
        ("nvidia-v100-pcie-32gb", None)
    ]
    assert "bf16 units" not in strict["recommendations"][0]["why"]
    assert strict["recommendations"][0]["throughput"] < rows[0]["throughput"]


def test_a_training_model_ask_reads_a_t4_at_fp16(db, client):
    items = _items(client, model="llama-3.1-8b", task="qlora")
    assert items["nvidia-t4"]["precision"] == "fp16"
    lacking = _without_bf16_units(db)
    assert all(i["precision"] is None for slug, i in items.items() if slug not in lacking)
    response = client.get(
        "/recommend",
        params={"budget": 600, "model": "llama-3.1-8b", "task": "qlora", "condition": "used"},
    )
    assert response.status_code == 200, response.text
    for item in response.json()["recommendations"]:
        assert ("no bf16 tensor rate" in item["why"]) == (item["precision"] == "fp16")
