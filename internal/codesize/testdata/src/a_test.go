package a

func longInTest() {
	_ = 1
	_ = 2
	_ = 3
}
