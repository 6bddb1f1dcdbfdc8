"""The Model lab workspace page (placeholder until its issue lands)."""

from app.widgets.placeholder import PlaceholderPage


class ModelLabPage(PlaceholderPage):
    TITLE = "Model lab"
    DESCRIPTION = "This workspace is being built."
