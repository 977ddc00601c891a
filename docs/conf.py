# Sphinx configuration of the companion's site (`make site`): the stored notebooks as pages,
# rendered from their committed outputs (nothing is executed, nothing is downloaded).
project = "companion: 56 ICML/ICLR 2023 papers you can run"
author = "the companion's authors"
extensions = ["myst_nb", "sphinx-mathjax-offline"]  # MathJax served from the site itself
nb_execution_mode = "off"  # pages show the outputs stored in the notebooks
myst_enable_extensions = ["dollarmath", "amsmath"]
myst_heading_anchors = 3
suppress_warnings = ["myst.header"]  # notebook titles jump from # to ###: fine on a page
exclude_patterns = ["_build"]
html_theme = "sphinx_book_theme"
html_title = "companion"
html_theme_options = {"show_toc_level": 2, "home_page_in_toc": True}
html_static_path: list[str] = []
