<?php
// A script the router declines: runs in the same request, as with php -S.
echo "page ", $_SERVER['REQUEST_URI'];
