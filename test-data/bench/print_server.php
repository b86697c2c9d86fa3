<?php
// FrankenPHP's BenchmarkServerSuperGlobal script: a full request that dumps $_SERVER.
print_r($_SERVER);
