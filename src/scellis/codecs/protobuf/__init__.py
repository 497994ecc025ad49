"""The protocol-buffers wire format (codecs layer): a schema-free reader and writer."""
