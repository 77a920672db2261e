from varsim.cli import main

raise SystemExit(main())
