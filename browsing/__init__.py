"""The agents' web browser: headless Chromium through Playwright, one context per chat."""
