"""``/docs`` and ``/redoc`` work offline: every asset they load is served by the app itself."""

import re

import pytest

ASSET = re.compile(r"""(?:src|href)\s*=\s*["']([^"']+)["']|url\(\s*["']?([^"')]+)""")
SPEC_URL = re.compile(r"""(?:url|spec-url)\s*[:=]\s*["']([^"']+)["']""")


@pytest.mark.parametrize("page", ["/docs", "/redoc"])
async def test_docs_pages_load_only_local_assets(api, page: str):
    response = await api.get(page)
    assert response.status_code == 200
    html = response.text
    urls = [a or b for a, b in ASSET.findall(html)] + SPEC_URL.findall(html)
    assert len(urls) >= 2, html  # a script and a stylesheet or favicon at least
    for url in urls:
        assert url.startswith("/") and not url.startswith("//"), f"{page} loads {url} remotely"
        assert (await api.get(url)).status_code == 200, url
    assert "/openapi.json" in urls


async def test_docs_assets_are_the_real_libraries(api):
    swagger = await api.get("/docs/assets/swagger-ui-bundle.js")
    redoc = await api.get("/docs/assets/redoc.standalone.js")
    assert "SwaggerUIBundle" in swagger.text[:2_000_000]
    assert "Redoc" in redoc.text
    assert swagger.headers["content-type"].startswith(("text/javascript", "application/javascript"))
