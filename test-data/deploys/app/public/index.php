<?php
// Classic mode: every request runs this from scratch.
require __DIR__ . '/../src/release.php';
require __DIR__ . '/../src/page.php';
release_page();
