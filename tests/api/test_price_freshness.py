"""Freshness, availability and stack rules through the API, on the configured database."""

import re
from datetime import timedelta

from service.read_model.snapshot import utc_today

WORKLOAD = {"workload": "resnet50-train", "max_gpus": 1, "limit": 50}


def _price(client, admin, gpu, usd, condition, days_ago):
    body = {"gpu": gpu, "usd": usd, "condition": condition, "source": "test-listing"}
    body["observed_at"] = str(utc_today() - timedelta(days=days_ago))
    assert client.post("/prices", json=body, headers=admin).status_code == 201


def test_a_stale_price_is_shown_but_ranked_only_with_allow_stale(fresh_client, keys):
    admin = keys.auth(keys.admin)
    _price(fresh_client, admin, "nvidia-titan-rtx", 500, "used", 400)
    params = WORKLOAD | {"budget": 600, "condition": "used", "min_memory_gb": 24, "limit": 50}
    strict = fresh_client.get("/recommend", params=params).json()
    assert "nvidia-titan-rtx" not in {r["gpu"] for r in strict["recommendations"]}
    if not strict["recommendations"]:  # the hint names the missing data or a fresh alternative
        hint = strict["hint"]
        assert ("allow_stale=true" in hint and "180 days" in hint) or "cheapest that fits" in hint
    loose = fresh_client.get("/recommend", params=params | {"allow_stale": True}).json()
    row = next(r for r in loose["recommendations"] if r["gpu"] == "nvidia-titan-rtx")
    assert row["unit_price"]["stale"] and row["unit_price"]["age_days"] == 400
    ranked = fresh_client.get("/rankings", params={"workload": "resnet50-train"}).json()
    item = next(i for i in ranked["items"] if i["gpu"] == "nvidia-titan-rtx")
    assert item["price"] is not None and item["status"] and item["stack"] == "cuda"
    if item["price"]["stale"]:
        assert item["perf_per_dollar"] is None
    _price(fresh_client, admin, "nvidia-titan-rtx", 520, "used", 10)
    fresh = fresh_client.get("/recommend", params=params).json()
    row = next(r for r in fresh["recommendations"] if r["gpu"] == "nvidia-titan-rtx")
    assert row["unit_price"]["usd"] == 520 and not row["unit_price"]["stale"]


def test_discontinued_gpus_are_never_priced_at_their_msrp(fresh_client, keys):
    for budget in (800, 2000, 5000):
        answer = fresh_client.get("/recommend", params={"budget": budget, "allow_stale": True})
        for r in answer.json()["recommendations"]:
            if r["status"] == "discontinued":
                assert r["unit_price"]["condition"] != "msrp"


def test_platform_gpus_only_in_whole_units_and_the_hint_says_so(fresh_client, keys):
    admin = keys.auth(keys.admin)
    _price(fresh_client, admin, "nvidia-h100-sxm", 25000, "new", 5)
    params = {"budget": 300000, "workload": "resnet50-train", "min_memory_gb": 80, "limit": 50}
    four = fresh_client.get("/recommend", params=params | {"max_gpus": 4}).json()
    assert all(r["gpu"] != "nvidia-h100-sxm" for r in four["recommendations"])
    # The hint names an excluded platform GPU only when it would beat what is offered; the
    # wording is held by tests/unit/test_price_rules.py.
    eight = fresh_client.get("/recommend", params=params | {"max_gpus": 8}).json()
    h100 = [r for r in eight["recommendations"] if r["gpu"] == "nvidia-h100-sxm"]
    assert h100 and all(r["count"] == 8 and r["sold_as"] == "hgx-8" for r in h100)
    assert h100[0]["total_price_usd"] == 200000


def test_stack_filter_and_why_name_the_stack(client):
    params = {"budget": 5000, "workload": "resnet50-train", "limit": 50}
    for stack in ("cuda", "rocm-radeon"):
        answer = client.get("/recommend", params=params | {"stack": stack}).json()
        assert answer["stack"] == stack
        for r in answer["recommendations"]:
            assert r["stack"] == stack and f"({stack})" in r["why"]
        ranked = client.get("/rankings", params={"stack": stack}).json()["items"]
        assert ranked and all(i["stack"] == stack for i in ranked)
    assert client.get("/recommend", params=params | {"stack": "glide"}).status_code == 422


def test_unpriced_platform_gpus_are_named_at_platform_budgets_only(fresh_client):
    """An 8-GPU platform nobody has priced is named in the hint when eight of it would beat the
    first answer and the budget covers eight of the cheapest priced datacenter GPU, never in
    the hint of an $800 question."""
    big = fresh_client.get("/recommend", params={"budget": 300000, "max_gpus": 8}).json()
    assert big["recommendations"] and "no public purchase price" in (big["hint"] or "")
    named = [s.split(" (")[0].split()[-1] for s in big["hint"].split("), ")]
    gpus = {g["slug"]: g for g in fresh_client.get("/gpus", params={"limit": 500}).json()["items"]}
    assert named and all(gpus[slug]["unit_gpus"] > 1 for slug in named)
    for budget in (800, 2000):
        small = fresh_client.get("/recommend", params={"budget": budget, "max_gpus": 8}).json()
        assert "no public purchase price" not in (small["hint"] or "")


def test_model_asks_rank_at_a_stale_price_only_with_allow_stale(fresh_client, keys):
    _price(fresh_client, keys.auth(keys.admin), "nvidia-titan-rtx", 500, "used", 400)
    params = {"budget": 600, "model": "llama-3.1-8b", "quant": "q4_k_m", "condition": "used"}
    params |= {"max_gpus": 1, "limit": 50}
    strict = fresh_client.get("/recommend", params=params).json()
    assert "nvidia-titan-rtx" not in {r["gpu"] for r in strict["recommendations"]}
    loose = fresh_client.get("/recommend", params=params | {"allow_stale": True}).json()
    assert loose["allow_stale"] is True
    row = next(r for r in loose["recommendations"] if r["gpu"] == "nvidia-titan-rtx")
    assert row["unit_price"]["stale"] and row["unit_price"]["age_days"] == 400
    assert (row["stack"], row["status"]) == ("cuda", "discontinued")
    # /rankings shows the stale price, flagged, as for a fixed workload, and ranks nothing by it
    ranked = fresh_client.get("/rankings", params={"model": "llama-3.1-8b", "condition": "used"})
    item = next(i for i in ranked.json()["items"] if i["gpu"] == "nvidia-titan-rtx")
    assert item["price"]["usd"] == 500 and item["price"]["stale"]
    assert item["price"]["age_days"] == 400
    assert item["perf_per_dollar"] is None and item["tco_usd"] is None


def test_an_empty_fine_tuning_answer_names_qlora_and_more_gpus_as_recommend_answers_them(
    fresh_client,
):
    """LoRA of a 70B model fits nothing within $40,000 on up to 4 GPUs; the hint names what
    QLoRA, and 8 GPUs where they buy something, would buy, and each is what /recommend answers
    first when asked so; a wider ask the hint does not name answers nothing. (Sharded data
    parallel keeps a whole sequence's activations on each GPU: 8 x 24 GB cards do not hold it,
    8 x 32 GB do; 7 x RTX 5090, 4,025 W, are no longer offered in the 8-GPU box, whose 4,200 W
    of supplies also carry its 200 W CPU.)"""

    ask = {"model": "llama-3.1-70b", "task": "lora", "budget": 40000}
    empty = fresh_client.get("/recommend", params=ask).json()
    assert not empty["recommendations"]
    hint = empty["hint"]
    qlora = re.search(r"with task=qlora \([\d.]+ GB on one GPU\) (\d+) x ([a-z0-9.-]+)", hint)
    wider = re.search(r"with max_gpus=8 (\d+) x ([a-z0-9.-]+)", hint)
    assert qlora, hint
    for extra, found in (({"task": "qlora"}, qlora), ({"max_gpus": 8}, wider)):
        answer = fresh_client.get("/recommend", params=ask | extra).json()["recommendations"]
        if found is None:
            assert not answer, (extra, hint)
            continue
        assert (answer[0]["count"], answer[0]["gpu"]) == (int(found[1]), found[2])
    assert wider is None or int(wider[1]) > 4


def test_an_empty_full_fine_tune_names_the_least_change_that_fits(fresh_client):
    """Phi-3-mini's full fine-tune (64 GB) fits nothing within $1,500: the hint names the first
    of 8-bit Adam, LoRA and QLoRA that something within the budget runs (it named only QLoRA,
    where LoRA fits a 12 GB card), and that ask answers what it names first."""
    ask = {"model": "phi-3-mini", "task": "full-finetune", "budget": 1500}
    empty = fresh_client.get("/recommend", params=ask).json()
    assert not empty["recommendations"]
    found = re.search(
        r"with (optimizer=adamw-8bit|task=lora|task=qlora) \([\d.]+ GB on one GPU\) "
        r"(\d+) x ([a-z0-9.-]+)",
        empty["hint"],
    )
    assert found, empty["hint"]
    changes = [{"optimizer": "adamw-8bit"}, {"task": "lora"}, {"task": "qlora"}]
    named = dict([found[1].split("=")])
    for change in changes[: changes.index(named)]:  # each lighter change before it fits nothing
        assert not fresh_client.get("/recommend", params=ask | change).json()["recommendations"]
    first = fresh_client.get("/recommend", params=ask | named).json()["recommendations"][0]
    assert (first["count"], first["gpu"]) == (int(found[2]), found[3])
    assert named != {"task": "qlora"}  # LoRA (10.5 GB) fits a card within $1,500


def test_an_empty_answer_names_a_cheaper_gpu_at_an_older_price(fresh_client, keys):
    """A 48 GB card whose only price is a year-old used listing below anything current: the
    empty answer says allow_stale=true would offer it, and allow_stale=true does."""
    _price(fresh_client, keys.auth(keys.admin), "nvidia-rtx-a6000", 300, "used", 400)
    ask = {"model": "llama-3.1-70b", "quant": "q4_k_m", "budget": 400, "max_gpus": 1}
    empty = fresh_client.get("/recommend", params=ask).json()
    assert not empty["recommendations"]
    assert (
        "at an older price (allow_stale=true) 1 x nvidia-rtx-a6000 costs $300, within the "
        "budget (used price of"
    ) in empty["hint"]
    loose = fresh_client.get("/recommend", params=ask | {"allow_stale": True}).json()
    assert loose["recommendations"][0]["gpu"] == "nvidia-rtx-a6000"
    assert "older price" not in (loose["hint"] or "")


def test_a_faster_card_kept_out_by_a_stale_price_is_named_in_the_hint(fresh_client, keys):
    admin = keys.auth(keys.admin)
    _price(fresh_client, admin, "nvidia-l40s", 1000, "used", 400)  # fast, only an old price
    _price(fresh_client, admin, "nvidia-gtx-1070", 50, "used", 400)  # slow: not worth naming
    params = WORKLOAD | {"budget": 1500, "condition": "used", "limit": 3}
    strict = fresh_client.get("/recommend", params=params).json()
    offered = strict["recommendations"]
    assert offered and all(r["gpu"] != "nvidia-l40s" for r in offered)
    hint = strict["hint"]
    month = (utc_today() - timedelta(days=400)).strftime("%Y-%m")
    assert f"nvidia-l40s (newest $1,000 from {month})" in hint
    assert "allow_stale=true" in hint and "nvidia-gtx-1070" not in hint
    loose = fresh_client.get("/recommend", params=params | {"allow_stale": True}).json()
    assert loose["recommendations"][0]["gpu"] == "nvidia-l40s"
    cool = fresh_client.get("/recommend", params=params | {"max_power_w": 300}).json()
    assert "nvidia-l40s" not in (cool["hint"] or "")  # 350 W: the ask's limit keeps it out too


def test_allow_stale_prices_a_gpu_still_made_at_its_list_price(fresh_client):
    """A 48 GB workstation card with no street price: its launch MSRP ranks with
    allow_stale=true (it is still made and sold at list), the empty answer says so, and the
    price names its citation, not the seed's marker."""
    ask = {"model": "llama-3.1-70b", "quant": "q4_k_m", "budget": 8000, "max_gpus": 1}
    hint = fresh_client.get("/recommend", params=ask).json()["hint"]
    found = re.search(r"at an older price \(allow_stale=true\) 1 x ([a-z0-9.-]+) costs", hint)
    assert found and "msrp price of" in hint, hint
    loose = fresh_client.get("/recommend", params=ask | {"allow_stale": True}).json()
    rows = {r["gpu"]: r for r in loose["recommendations"]}
    price = rows[found[1]]["unit_price"]
    assert price["condition"] == "msrp" and price["stale"] and price["source"] != "msrp"


def test_a_card_whose_older_price_buys_several_that_beat_the_first_answer_is_named(
    fresh_client, keys
):
    """Compared at as many cards as its older price buys within the budget and max_gpus: one
    L40S is slower than the first answer's several cards, four of them are not."""
    _price(fresh_client, keys.auth(keys.admin), "nvidia-l40s", 1000, "used", 400)
    params = WORKLOAD | {"budget": 5000, "condition": "used", "max_gpus": 4, "platform_usd": 0}
    answer = fresh_client.get("/recommend", params=params).json()
    first = answer["recommendations"][0]
    one = fresh_client.get(
        "/compare", params={"gpu": "nvidia-l40s", "count": 1, "workload": WORKLOAD["workload"]}
    ).json()["throughput"]
    assert first["count"] > 1 and one < first["throughput"]  # one card alone would not be named
    assert "nvidia-l40s (newest $1,000 from" in (answer["hint"] or ""), answer["hint"]


def test_an_old_purchase_price_on_a_cloud_only_gpu_leaves_the_answer_whole(fresh_client, keys):
    """A purchase price recorded for a GPU sold only as a cloud rental (the A10G) is no count
    of it a buyer can take: the kept-out hint must not be built on an empty list of counts."""
    _price(fresh_client, keys.auth(keys.admin), "nvidia-a10g", 900, "used", 400)
    for mode in ("parallel", "independent"):
        params = {"budget": 1500, "workload": "resnet50-train", "mode": mode}
        response = fresh_client.get("/recommend", params=params)
        assert response.status_code == 200, response.text
        assert "nvidia-a10g" not in {r["gpu"] for r in response.json()["recommendations"]}


def test_the_cheapest_named_by_an_empty_answer_is_offered_at_that_budget(fresh_client):
    """An empty answer's 'the cheapest is N x GPU at $X + $Y for the box' is a configuration
    /recommend offers at $X + $Y: never one that no sourced box holds or powers (7 x RTX 5090
    had been named for a 70B LoRA within $40,000 on 8 GPUs after the 8-GPU box stopped taking
    them: 4,025 W and a 200 W CPU on 4,200 W of supplies)."""
    ask = {"model": "llama-3.1-70b", "task": "lora", "budget": 40000, "max_gpus": 8}
    empty = fresh_client.get("/recommend", params=ask).json()
    assert not empty["recommendations"]
    hint = empty["hint"]
    found = re.search(r"the cheapest is (\d+) x ([a-z0-9.-]+) at \$([\d,]+)", hint)
    assert found, hint
    box = re.search(r"\+ \$([\d,]+) for the box of", hint)
    count, gpu = int(found[1]), found[2]
    total = float(found[3].replace(",", "")) + (float(box[1].replace(",", "")) if box else 0.0)
    offered = fresh_client.get("/recommend", params=ask | {"budget": total + 1}).json()
    assert (count, gpu) in {(r["count"], r["gpu"]) for r in offered["recommendations"]}, (
        empty["hint"],
        offered["hint"],
    )


def test_a_model_answer_names_a_faster_card_that_only_an_older_price_buys(fresh_client, keys):
    """As a workload ask's hint names what a stale price kept out: an 80 GB A100 PCIe whose only
    price is a year-old used listing runs Llama-3.1-70B Q4_K_M on one card, faster than the
    answer's first row; the answer says so, allow_stale=true offers it, and a card slower
    than the first row, or past the budget at its older price ($3,500 against $3,000), is not
    named."""
    admin = keys.auth(keys.admin)
    ask = {"model": "llama-3.1-70b", "quant": "q4_k_m", "budget": 4000, "condition": "used"}
    before = fresh_client.get("/recommend", params=ask).json()
    first = before["recommendations"][0]
    assert "nvidia-a100-pcie-80gb" not in {r["gpu"] for r in before["recommendations"]}
    _price(
        fresh_client, admin, "nvidia-a100-pcie-80gb", 3500, "used", 400
    )  # fast, only an old price
    _price(fresh_client, admin, "nvidia-gtx-1070", 50, "used", 400)  # holds none of it
    strict = fresh_client.get("/recommend", params=ask).json()
    assert strict["recommendations"][0] == first
    ranked = fresh_client.get("/rankings", params={"model": ask["model"], "quant": ask["quant"]})
    one = next(i for i in ranked.json()["items"] if i["gpu"] == "nvidia-a100-pcie-80gb")
    assert one["throughput"] > first["throughput"], (one, first)  # what the test rests on
    found = re.search(
        r"at an older price \(allow_stale=true\) (\d+) x nvidia-a100-pcie-80gb runs it faster, "
        r"~([\d,.]+) tokens/s \(\w+\), for \$([\d,]+) \(used price of ",
        strict["hint"] or "",
    )
    assert found, strict["hint"]
    assert float(found[2].replace(",", "")) > first["throughput"]
    assert float(found[3].replace(",", "")) <= ask["budget"]
    loose = fresh_client.get("/recommend", params=ask | {"allow_stale": True}).json()
    assert "nvidia-a100-pcie-80gb" in {r["gpu"] for r in loose["recommendations"]}
    assert "older price" not in (loose["hint"] or "")
    tight = fresh_client.get("/recommend", params=ask | {"budget": 3000}).json()
    assert tight["recommendations"] and "nvidia-a100-pcie-80gb" not in (tight["hint"] or "")
