"""The web page in a real browser: headless Chromium (Debian's chromium + chromium-driver, see
`make browser`) against `gpu-advisor serve` in a child process. Fills the form, submits,
sees the results table and non-empty charts, follows a link to a GPU page; screenshots go to
screenshots/ (git-ignored). Skipped when no browser is installed, unless
GPU_ADVISOR_REQUIRE_BROWSER=1 (CI sets it, so a missing browser fails there)."""

import os
import shutil
from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlmodel import Session, col, select

from service.core.db import make_engine
from service.models import Gpu, Price
from tests.conftest import drop_database, new_database_url
from tests.e2e.servers import ROOT, run_cli, running_server

pytestmark = pytest.mark.e2e
CHROMIUM = os.environ.get("GPU_ADVISOR_CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("GPU_ADVISOR_CHROMEDRIVER", "/usr/bin/chromedriver")
SHOTS = ROOT / "screenshots"


def _browser_or_skip():
    have = Path(CHROMIUM).exists() and shutil.which(CHROMEDRIVER)
    if not have:
        if os.environ.get("GPU_ADVISOR_REQUIRE_BROWSER") == "1":
            pytest.fail(f"no browser at {CHROMIUM} / {CHROMEDRIVER}: run `make browser`")
        pytest.skip("chromium / chromedriver not installed (make browser)")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"):
        options.add_argument(arg)
    options.add_argument("--window-size=1280,1800")
    return webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)


def _add_cloud_prices(url: str) -> None:
    """A cloud offer for every GPU with a card price, so break-even figures appear."""
    engine = make_engine(url)
    today = datetime.now(UTC).date()
    with Session(engine) as session:
        priced = session.exec(select(Price.gpu_id).where(col(Price.usd).is_not(None))).all()
        for gpu_id in set(session.exec(select(Gpu.id)).all()) & set(priced):
            session.add(
                Price(
                    gpu_id=gpu_id,
                    usd_per_hour=1.25,
                    provider="testcloud",
                    condition="cloud",
                    source="browser test fixture",
                    observed_at=today,
                )
            )
        session.commit()
    engine.dispose()


def test_form_results_chart_and_gpu_page_in_chromium(tmp_path):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import Select

    driver = _browser_or_skip()
    SHOTS.mkdir(exist_ok=True)
    url = new_database_url(str(tmp_path))
    try:
        run_cli(url, "migrate")
        run_cli(url, "seed")
        _add_cloud_prices(url)
        with running_server(url) as base:
            driver.get(base + "/")
            assert driver.find_element(By.CSS_SELECTOR, "label[for=budget]").text
            charts = driver.find_elements(By.CSS_SELECTOR, "svg.chart")
            assert len(charts) >= 3
            driver.save_screenshot(str(SHOTS / "01-index.png"))

            budget = driver.find_element(By.ID, "budget")
            budget.send_keys("5000")
            Select(driver.find_element(By.ID, "condition")).select_by_value("new")
            hours = driver.find_element(By.ID, "hours_per_day")
            hours.clear()
            hours.send_keys("12")
            power = driver.find_element(By.ID, "electricity_usd_per_kwh")
            power.clear()
            power.send_keys("0.3")
            power.send_keys(Keys.ENTER)  # keyboard submit, no JavaScript involved

            table = driver.find_element(By.ID, "results")
            rows = table.find_elements(By.CSS_SELECTOR, "tbody tr:not(.why-row)")
            assert rows, driver.page_source[:2000]
            headers = [th.text for th in table.find_elements(By.CSS_SELECTOR, "thead th")]
            assert {"Basis", "Likely band", "Break-even"} <= set(headers)
            assert table.find_elements(By.CSS_SELECTOR, "tr.why-row td.why")
            assert "h" in rows[0].find_elements(By.TAG_NAME, "td")[10].text  # break-even hours
            assert "hours_per_day=12" in driver.current_url
            bars = driver.find_elements(By.CSS_SELECTOR, "svg.bar-chart rect.bar")
            assert bars and all(float(b.get_attribute("width")) > 0 for b in bars)
            driver.save_screenshot(str(SHOTS / "02-results.png"))

            link = rows[0].find_element(By.CSS_SELECTOR, "td a")
            name = link.text
            link.click()
            assert driver.find_element(By.TAG_NAME, "h1").text == name
            assert driver.find_element(By.ID, "specs").find_elements(By.TAG_NAME, "tr")
            assert driver.find_elements(By.CSS_SELECTOR, "svg.line-chart polyline")
            driver.save_screenshot(str(SHOTS / "03-gpu.png"))
    finally:
        driver.quit()
        drop_database(url)
