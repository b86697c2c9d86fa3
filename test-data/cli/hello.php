<?php
echo "hello from ", PHP_SAPI, "\n";
