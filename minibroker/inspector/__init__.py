"""The web inspector's static page, script and style sheet, served by ``minibroker.control.inspector_pages``."""
