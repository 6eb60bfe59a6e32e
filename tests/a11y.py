"""What the accessibility browser tests of both wings share: axe-core's WCAG 2.0, 2.1 and 2.2
level A and AA rules run on the page as it is now, a sentence per violation (its rule id and
the nodes it found), and the checks a person with a keyboard, a phone or 200% zoom notices.

axe-core ships inside ``axe-playwright-python`` (Deque's rules; https://github.com/dequelabs/
axe-core/blob/develop/doc/rule-descriptions.md); WCAG 2.2: https://www.w3.org/TR/WCAG22/."""

from __future__ import annotations

from axe_playwright_python.sync_playwright import Axe

WCAG_TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "wcag22aa"]
AXE = Axe()


def violations(page) -> list[str]:
    """Each WCAG A/AA violation axe finds on ``page`` now, as ``rule (impact): selector —
    html``, one line per node."""
    options = {"runOnly": {"type": "tag", "values": WCAG_TAGS}, "resultTypes": ["violations"]}
    found = AXE.run(page, options=options).response["violations"]
    return [
        f"{rule['id']} ({rule['impact']}): {' '.join(node['target'])} — {node['html'][:160]}"
        for rule in found
        for node in rule["nodes"]
    ]


def assert_accessible(page, where: str) -> None:
    """Fails naming ``where``, each violated rule and its nodes."""
    found = violations(page)
    assert not found, f"{where}: {len(found)} WCAG violation(s):\n" + "\n".join(found)


def assert_fits_320(page, where: str) -> None:
    """At 320 CSS px wide (a 1,280 px screen at 400% zoom, WCAG 1.4.10) nothing scrolls
    sideways."""
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= 320, f"{where}: the page is {width} px wide at 320 px, so it scrolls sideways"


def check(page, where: str) -> None:
    """The page in its state ``where`` passes axe and fits 320 CSS px."""
    assert_accessible(page, where)
    assert_fits_320(page, where)


def focused(page) -> dict:
    """The focused element: its tag, id and value, and whether a focus ring shows (an outline
    or a box shadow, WCAG 2.4.7)."""
    return page.evaluate(
        """() => {
          const el = document.activeElement;
          const style = getComputedStyle(el);
          const ring = (style.outlineStyle !== 'none' && parseFloat(style.outlineWidth) > 0)
            || style.boxShadow !== 'none';
          return {tag: el.tagName.toLowerCase(), id: el.id, ring: ring, value: el.value || ''};
        }"""
    )


def tab_to(page, selector: str, limit: int = 60, back: bool = False) -> dict:
    """Press Tab (Shift+Tab when ``back``) until the element matching ``selector`` has the
    focus, as a keyboard user would; fails if it is not reached in ``limit`` presses or shows
    no focus ring."""
    for _ in range(limit):
        if page.evaluate("s => document.activeElement.matches(s)", selector):
            now = focused(page)
            assert now["ring"], f"{selector} has the keyboard's focus but shows no focus ring"
            return now
        page.keyboard.press("Shift+Tab" if back else "Tab")
    raise AssertionError(f"{selector} was not reached in {limit} presses of Tab")


class MouseWatch:
    """Counts the mouse and pointer presses on every page of a context, across navigations,
    so a keyboard-only test can prove it never used one."""

    def __init__(self, context) -> None:
        self.presses = 0
        context.expose_function("__cyoaMouse", self._pressed)
        context.add_init_script(
            "for (const kind of ['mousedown', 'pointerdown', 'mouseup', 'pointerup'])"
            " window.addEventListener(kind, () => window.__cyoaMouse(), true);"
        )

    def _pressed(self) -> None:
        self.presses += 1
