<?php
echo "before\n";
undefined_function_call();
echo "after\n";
