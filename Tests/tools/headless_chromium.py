"""Debian's headless Chromium through its chromedriver, as the browser tests drive it (Tests/fleet,
Tests/homeassistant); run with the browser venv's Python (make deps-browser), which has Selenium."""
from selenium import webdriver
from selenium.webdriver.chrome.service import Service


def driver(width, height, page_load_timeout):
    options = webdriver.ChromeOptions()
    for flag in ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 f"--window-size={width},{height}"]:
        options.add_argument(flag)
    options.binary_location = "/usr/bin/chromium"
    d = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
    d.set_page_load_timeout(page_load_timeout)
    return d
