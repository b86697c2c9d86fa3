<?php
// A request still running when the release switches: it sleeps, then includes a file
// of its own release (the include happens after the switch) and answers.
require __DIR__ . '/../src/page.php';
usleep((int) ($_GET['ms'] ?? 1000) * 1000);
require __DIR__ . '/../src/release.php';
release_page();
