"""The inspector page as a test sees it: a real headless Chromium driven by selenium."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webelement import WebElement
from selenium.webdriver.support import expected_conditions as ec
from selenium.webdriver.support.ui import Select, WebDriverWait

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
WAIT_SECONDS = 20.0  # how long a step may take on a loaded machine before the test fails
T = TypeVar("T")


def headless_chromium(profile: Path) -> webdriver.Chrome:
    """Debian's chromium, headless, with a fresh profile and no background traffic."""
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in (
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--window-size=1280,860",
        f"--user-data-dir={profile}",
    ):
        options.add_argument(flag)
    return webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=options)


class InspectorPage:
    def __init__(self, driver: webdriver.Chrome, url: str, shots: Path) -> None:
        self.driver = driver
        self.url = url
        self.shots = shots

    # -- waiting and finding ------------------------------------------------------

    def until(self, condition: Callable[[webdriver.Chrome], T]) -> T:
        return WebDriverWait(self.driver, WAIT_SECONDS).until(condition)

    def by_id(self, element_id: str) -> WebElement:
        return self.driver.find_element(By.ID, element_id)

    def visible(self, element_id: str) -> bool:
        return self.by_id(element_id).is_displayed()

    def rows(self, table_id: str) -> list[list[str]]:
        cells = self.driver.execute_script(
            "return [...document.querySelectorAll(arguments[0])]"
            ".map(r => [...r.cells].map(c => c.textContent));",
            f"#{table_id} tbody tr",
        )
        return [list(map(str, row)) for row in cells]

    def column(self, table_id: str, index: int) -> list[str]:
        return [row[index] for row in self.rows(table_id)]

    def settled(self) -> None:
        """Wait until the page has no request in flight (``aria-busy`` is false)."""
        self.until(lambda _: self.by_id("app").get_attribute("aria-busy") == "false")

    def wait_for_row(self, table_id: str, index: int, text: str) -> None:
        self.until(lambda _: text in self.column(table_id, index))

    def shoot(self, name: str) -> Path:
        path = self.shots / name
        self.driver.save_screenshot(str(path))
        return path

    # -- acting -------------------------------------------------------------------

    def open(self) -> None:
        self.driver.get(f"{self.url}/ui/")
        self.until(lambda _: self.visible("login"))

    def sign_in(self, key: str) -> None:
        self.by_id("api-key").send_keys(key)
        self.by_id("api-key").submit()

    def sign_in_and_wait(self, key: str) -> None:
        self.sign_in(key)
        self.until(lambda _: self.visible("memories"))
        self.settled()

    def tab(self, view: str) -> None:
        self.driver.find_element(By.CSS_SELECTOR, f'.tab[data-view="{view}"]').click()
        self.until(lambda _: self.visible(f"view-{view}"))
        self.settled()

    def filter(
        self, *, agent: str = "", scope: str = "", session: str = "", as_of: str = ""
    ) -> None:
        for element_id, text in (("f-agent", agent), ("f-session", session), ("f-as-of", as_of)):
            self.by_id(element_id).clear()
            self.by_id(element_id).send_keys(text)
        Select(self.by_id("f-scope")).select_by_value(scope)
        self.driver.find_element(By.CSS_SELECTOR, '#filters button[type="submit"]').click()
        self.settled()

    def search(self, query: str, mode: str = "hybrid") -> None:
        self.tab("search")
        Select(self.by_id("mode")).select_by_value(mode)
        self.by_id("q").clear()
        self.by_id("q").send_keys(query)
        self.by_id("q").submit()

    def press(self, table_id: str, label: str) -> None:
        """Click the row button whose accessible label is ``label`` ("Edit fav")."""
        self.driver.find_element(
            By.CSS_SELECTOR, f'#{table_id} button[aria-label="{label}"]'
        ).click()

    def confirm(self) -> None:
        self.until(ec.alert_is_present())
        self.driver.switch_to.alert.accept()
