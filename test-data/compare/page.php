<?php
require __DIR__ . '/app/bootstrap.php';
echo render_page();
