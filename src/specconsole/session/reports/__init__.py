"""A session's reports: Markdown, HTML and JSON, their charts and sections, and the comparison of
sessions."""
