<?php
// No tracing call at all: the server span alone.
echo "hello\n";
