"""Charts drawn as text: the series a chart plots from the records, the plotext renderings and their
markers."""
