"""qconsole: administration and monitoring console for file-based message queues.

Importing this package must stay cheap: no Textual, no PySpark, no Rich here.
"""

__version__ = "0.1.0"
