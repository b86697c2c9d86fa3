<?php
// Without a router, php -S falls back to the nearest index.php for paths naming no file.
echo "index ", $_SERVER['REQUEST_URI'];
